defmodule ExZarr.Node do
  @moduledoc false
  # Reads and writes the metadata documents of a node (array or group) at a path in a store:
  # `zarr.json` for Zarr v3, `.zarray` / `.zgroup` / `.zattrs` for Zarr v2.
  #
  # Changes to a stored document are read-modify-writes with `ExZarr.Storage.update/4`: the
  # document is read with its generation, changed and stored on the condition that nobody
  # rewrote it meanwhile, else read again. So concurrent writers (processes, OS processes,
  # machines, as far as the store's conditions reach) never undo each other's change: an
  # attribute change keeps a concurrent resize's shape and the reverse, two attribute changes
  # both land, a missing ancestor group is created once. On a store without conditional writes
  # (a custom backend), the documents are updated under the node-wide lock only.

  alias ExZarr.{Indexing, JSON, Metadata, Result, Storage}
  alias ExZarr.Metadata.{V2, V3}
  alias ExZarr.Storage.Keys

  @doc """
  Writes the metadata of an array at `prefix`, all but its attributes when it is already
  stored: a new array is written whole; an existing one (a resize) gets `meta`'s shape and
  the rest of its definition, and keeps the attributes stored (`.zattrs`, or `attributes` in
  `zarr.json`), which only `change_attributes/4` changes. So a resize and a concurrent
  attribute change never undo each other.
  """
  @spec write_array_metadata(Storage.t(), String.t(), Metadata.t()) :: :ok | {:error, term()}
  def write_array_metadata(storage, prefix, %Metadata{zarr_format: 3} = meta) do
    doc = V3.encode(meta)

    storage
    |> update_json(Keys.join(prefix, "zarr.json"), fn
      %{} = stored -> {:ok, Map.put(doc, "attributes", Map.get(stored, "attributes", %{})), :ok}
      _absent_or_not_an_object -> {:ok, doc, :ok}
    end)
    |> done()
  end

  def write_array_metadata(storage, prefix, %Metadata{zarr_format: 2} = meta) do
    with {:ok, %{zarray: zarray, zattrs: zattrs}} <- V2.encode(meta),
         :ok <- Storage.put(storage, Keys.join(prefix, ".zarray"), JSON.encode(zarray)) do
      done(put_absent(storage, Keys.join(prefix, ".zattrs"), JSON.encode(zattrs)))
    end
  end

  @doc """
  Read-modify-write of the shape of the array at `prefix`: `fun` gets the stored shape and
  answers `{:ok, new_shape}` (or an error); nothing else of the array's documents changes.
  Returns the shape before and after, so that concurrent appends each get their own region:

      {:ok, {old, new}} =
        ExZarr.Node.update_shape(store, "a", fn {n, m} -> {:ok, {n + rows, m}} end)
  """
  @spec update_shape(Storage.t(), String.t(), (tuple() -> {:ok, tuple()} | {:error, term()})) ::
          {:ok, {tuple(), tuple()}} | {:error, term()}
  def update_shape(storage, prefix, fun) do
    with {:ok, name} <- array_document(storage, prefix) do
      update_json(storage, Keys.join(prefix, name), fn
        %{"shape" => shape} = doc when is_list(shape) ->
          with {:ok, new} <- fun.(List.to_tuple(shape)),
               :ok <- same_rank(shape, new),
               do: {:ok, %{doc | "shape" => Tuple.to_list(new)}, {List.to_tuple(shape), new}}

        nil ->
          {:error, :not_found}

        _other ->
          {:error, {:invalid_metadata, "#{name} has no shape"}}
      end)
    end
  end

  defp array_document(storage, prefix) do
    case read_node(storage, prefix, node_type: :array, use_consolidated: false) do
      {:ok, {:array, %Metadata{zarr_format: 3}}} -> {:ok, "zarr.json"}
      {:ok, {:array, %Metadata{zarr_format: 2}}} -> {:ok, ".zarray"}
      {:ok, {:group, _}} -> {:error, {:not_an_array, prefix}}
      error -> error
    end
  end

  defp same_rank(shape, new) when is_tuple(new) and tuple_size(new) == length(shape) do
    if Enum.all?(Tuple.to_list(new), &(is_integer(&1) and &1 >= 0)),
      do: :ok,
      else: {:error, {:invalid_shape, new}}
  end

  defp same_rank(_shape, new), do: {:error, {:invalid_shape, new}}

  @doc "True when an array or group is stored at `prefix` (either format)."
  @spec exists?(Storage.t(), String.t()) :: boolean()
  def exists?(storage, prefix) do
    Enum.any?(Metadata.document_names(:node), fn name ->
      match?({:ok, _}, Storage.get(storage, Keys.join(prefix, name), {0, 0}))
    end)
  end

  @doc """
  Deletes every key of the node at `prefix` and below (the whole store for ""), with
  `ExZarr.Storage.delete_prefix/2` (on the filesystem, leftovers of interrupted writes too).
  """
  @spec delete_tree(Storage.t(), String.t()) :: :ok | {:error, term()}
  def delete_tree(storage, prefix), do: Storage.delete_prefix(storage, prefix)

  @typedoc "The keys stored under an array, relative to it, sorted out by `array_keys/3`."
  @type array_keys :: %{
          documents: [String.t()],
          chunks: [{String.t(), tuple()}],
          others: [String.t()]
        }

  @doc """
  The keys stored under the array at `prefix` (relative to it), sorted out: its metadata
  documents, its chunks with their coordinates (keys of its chunk key encoding inside its
  chunk grid) and the others (outside the grid, another encoding, stray files).
  `:unlistable` on a store that cannot list.
  """
  @spec array_keys(Storage.t(), String.t(), Metadata.t()) ::
          {:ok, array_keys()} | :unlistable | {:error, term()}
  def array_keys(storage, prefix, %Metadata{} = meta) do
    case Storage.list(storage, prefix) do
      {:ok, keys} -> {:ok, sort_out(meta, relative(keys, prefix))}
      {:error, {:not_supported, _}} -> :unlistable
      error -> error
    end
  end

  defp relative(keys, ""), do: keys

  defp relative(keys, prefix) do
    dir = prefix <> "/"
    skip = byte_size(dir)

    for key <- keys,
        String.starts_with?(key, dir),
        do: binary_part(key, skip, byte_size(key) - skip)
  end

  defp sort_out(meta, keys) do
    names = Metadata.document_names(:all)
    {documents, others} = Enum.split_with(keys, &(&1 in names))

    {chunks, others} =
      Enum.reduce(others, {[], []}, fn key, {chunks, others} ->
        case chunk_coords(meta, key) do
          {:ok, coords} -> {[{key, coords} | chunks], others}
          :error -> {chunks, [key | others]}
        end
      end)

    %{documents: documents, chunks: Enum.reverse(chunks), others: Enum.reverse(others)}
  end

  # The coordinates of a chunk of the array's grid that `key` names, else :error.
  defp chunk_coords(meta, key) do
    with {:ok, coords} <- Metadata.chunk_coords(meta, key),
         true <- Indexing.valid_chunk?(meta.shape, meta.chunks, coords),
         do: {:ok, coords},
         else: (_ -> :error)
  end

  @doc """
  Checks a node's path inside a store as the `prefix:` option gives it: `""` (the root) or a
  relative key that stays inside the store (see `ExZarr.Storage.validate_key/1`).

      iex> ExZarr.Node.check_prefix("a/b")
      :ok
      iex> ExZarr.Node.check_prefix("../b")
      {:error, {:invalid_prefix, "../b"}}
  """
  @spec check_prefix(term()) :: :ok | {:error, {:invalid_prefix, term()}}
  def check_prefix(""), do: :ok

  def check_prefix(prefix) do
    case Storage.validate_key(prefix) do
      :ok -> :ok
      {:error, _} -> {:error, {:invalid_prefix, prefix}}
    end
  end

  defp decode_json(json, name) do
    case JSON.decode(json) do
      {:ok, doc} -> {:ok, doc}
      {:error, {:invalid_json, reason}} -> {:error, {:invalid_json, name, reason}}
    end
  end

  defp read_optional_json(storage, key) do
    case Storage.get(storage, key) do
      {:ok, json} -> decode_json(json, key)
      {:error, :not_found} -> {:ok, nil}
      error -> error
    end
  end

  # -- nodes of either kind (groups, hierarchies) --------------------------------------------

  alias ExZarr.Metadata.{Attributes, Consolidated}
  alias ExZarr.Metadata.Group, as: GroupMetadata
  alias ExZarr.Result

  @typedoc "The metadata of a node: an array's or a group's."
  @type node_metadata :: {:array, Metadata.t()} | {:group, GroupMetadata.t()}

  @typedoc "Fetches a decoded JSON document of a node by name (`\"zarr.json\"`, `\".zattrs\"`)."
  @type getter :: (String.t() -> {:ok, term()} | {:error, term()})

  @doc """
  Reads the node (array or group) at `prefix`. Options:

    * `zarr_format:` `2`, `3` or `nil` (default: detect, v3 first)
    * `node_type:` `:array`, `:group` or `nil` (default): skips the lookups of the other kind
    * `use_consolidated:` `nil` (default: use consolidated metadata when present), `true`
      (require it: `{:error, :no_consolidated_metadata}` when absent) or `false` (ignore it)

  `{:error, :not_found}` when there is no node.
  """
  @spec read_node(Storage.t(), String.t(), keyword()) :: {:ok, node_metadata()} | {:error, term()}
  def read_node(storage, prefix, opts \\ []) do
    decode_node(fn name -> fetch_json(storage, Keys.join(prefix, name)) end, opts)
  end

  @doc """
  Like `read_node/3`, with the documents coming from `get` (for example from consolidated
  metadata) rather than from a store.
  """
  @spec decode_node(getter(), keyword()) :: {:ok, node_metadata()} | {:error, term()}
  def decode_node(get, opts) do
    format = Keyword.get(opts, :zarr_format)

    with :miss <- if(format in [nil, 3], do: v3_node(get, opts), else: :miss),
         :miss <- if(format in [nil, 2], do: v2_node(get, opts), else: :miss) do
      {:error, :not_found}
    end
  end

  defp v3_node(get, opts) do
    case get.("zarr.json") do
      {:ok, %{"node_type" => "group"} = doc} ->
        with {:ok, meta} <- GroupMetadata.decode_v3(doc),
             {:ok, meta} <- apply_consolidated(meta, meta.consolidated, opts),
             do: {:ok, {:group, meta}}

      {:ok, doc} ->
        with {:ok, meta} <- V3.decode(doc), do: {:ok, {:array, meta}}

      {:error, :not_found} ->
        :miss

      error ->
        error
    end
  end

  defp v2_node(get, opts) do
    with :miss <- if(opts[:node_type] == :group, do: :miss, else: v2_array(get)),
         :miss <- if(opts[:node_type] == :array, do: :miss, else: v2_group(get, opts)) do
      :miss
    end
  end

  defp v2_array(get) do
    with {:ok, zarray} <- found(get.(".zarray")),
         {:ok, zattrs} <- optional(get.(".zattrs")),
         {:ok, meta} <- V2.decode(zarray, zattrs) do
      {:ok, {:array, meta}}
    end
  end

  defp v2_group(get, opts) do
    consolidated = if opts[:use_consolidated] == false, do: :miss, else: found(get.(".zmetadata"))

    with {:ok, {zgroup, zattrs, entries}} <- v2_group_documents(get, consolidated),
         {:ok, meta} <- GroupMetadata.decode_v2(zgroup, zattrs),
         {:ok, meta} <- apply_consolidated(meta, entries, opts) do
      {:ok, {:group, meta}}
    end
  end

  defp v2_group_documents(get, {:ok, zmetadata}) do
    with {:ok, {zgroup, zattrs, entries}} <- Consolidated.from_v2(zmetadata),
         {:ok, zgroup} <- if(zgroup, do: {:ok, zgroup}, else: found(get.(".zgroup"))) do
      {:ok, {zgroup, zattrs, entries}}
    end
  end

  defp v2_group_documents(get, :miss) do
    with {:ok, zgroup} <- found(get.(".zgroup")),
         {:ok, zattrs} <- optional(get.(".zattrs")) do
      {:ok, {zgroup, zattrs, nil}}
    end
  end

  defp v2_group_documents(_get, error), do: error

  defp apply_consolidated(meta, entries, opts) do
    case {Keyword.get(opts, :use_consolidated), entries} do
      {false, _} -> {:ok, %{meta | consolidated: nil}}
      {true, nil} -> {:error, :no_consolidated_metadata}
      _ -> {:ok, %{meta | consolidated: entries}}
    end
  end

  defp found({:error, :not_found}), do: :miss
  defp found(other), do: other

  defp optional({:error, :not_found}), do: {:ok, nil}
  defp optional(other), do: other

  defp fetch_json(storage, key) do
    with {:ok, json} <- Storage.get(storage, key), do: decode_json(json, key)
  end

  @doc """
  Writes the documents of a group at `prefix` (`zarr.json`, or `.zgroup` and `.zattrs`).
  For a v2 group with consolidated metadata, `.zmetadata` is rewritten too.
  """
  @spec write_group_metadata(Storage.t(), String.t(), GroupMetadata.t()) :: :ok | {:error, term()}
  def write_group_metadata(storage, prefix, %GroupMetadata{} = meta) do
    with :ok <- put_all(storage, prefix, GroupMetadata.to_documents(meta)) do
      write_zmetadata(storage, prefix, meta)
    end
  end

  defp write_zmetadata(storage, prefix, %GroupMetadata{zarr_format: 2, consolidated: %{} = e} = m) do
    doc = Consolidated.to_v2(Metadata.attributes_to_json(m.attributes), e)
    Storage.put(storage, Keys.join(prefix, ".zmetadata"), JSON.encode(doc))
  end

  defp write_zmetadata(_storage, _prefix, _meta), do: :ok

  @doc """
  Applies an attribute change (see `ExZarr.Metadata.Attributes.change/2`) to the attributes stored for
  the node at `prefix` (not to those in `meta`, which may be older), as one read-modify-write
  of the document that holds them: `.zattrs` for v2 (then the root entry of a consolidated v2
  group's `.zmetadata`), `attributes` in `zarr.json` for v3. Returns `meta` with the
  attributes now stored.
  """
  @spec change_attributes(Storage.t(), String.t(), node_metadata(), Attributes.change()) ::
          {:ok, Metadata.t() | GroupMetadata.t()} | {:error, term()}
  def change_attributes(storage, prefix, {kind, meta}, change) do
    with {:ok, _} <- Attributes.change(meta.attributes, change),
         {:ok, attributes} <- change_stored_attributes(storage, prefix, meta.zarr_format, change),
         meta = %{meta | attributes: attributes},
         :ok <- sync_zmetadata(storage, prefix, kind, meta) do
      {:ok, meta}
    end
  end

  defp change_stored_attributes(storage, prefix, 3, change) do
    update_zarr_json(storage, prefix, fn doc ->
      with {:ok, new} <- changed(Map.get(doc, "attributes", %{}), change, "zarr.json"),
           do: {:ok, Map.put(doc, "attributes", Metadata.attributes_to_json(new)), new}
    end)
  end

  defp change_stored_attributes(storage, prefix, 2, change) do
    update_json(storage, Keys.join(prefix, ".zattrs"), fn stored ->
      with {:ok, new} <- changed(stored || %{}, change, ".zattrs"),
           do: {:ok, Metadata.attributes_to_json(new), new}
    end)
  end

  defp changed(%{} = json, change, _name),
    do: Attributes.change(Metadata.attributes_from_json(json), change)

  defp changed(_other, _change, name),
    do: {:error, {:invalid_metadata, "the attributes in #{name} are not a JSON object"}}

  # The root attributes in a consolidated v2 group's .zmetadata follow its .zattrs.
  defp sync_zmetadata(storage, prefix, :group, %GroupMetadata{zarr_format: 2} = meta) do
    attributes = Metadata.attributes_to_json(meta.attributes)

    storage
    |> update_json(Keys.join(prefix, ".zmetadata"), fn
      %{"metadata" => %{} = entries} = doc ->
        {:ok, %{doc | "metadata" => Map.put(entries, ".zattrs", attributes)}, :ok}

      _absent_or_malformed ->
        {:keep, :ok}
    end)
    |> done()
  end

  defp sync_zmetadata(_storage, _prefix, _kind, _meta), do: :ok

  @doc """
  Creates the group documents at `prefix` unless a node document is already there: `:ok`, or
  `{:error, :exists}` when another writer (or an earlier call) got there first. For v3 the
  condition is on `zarr.json` (which arrays use too); for v2 on `.zgroup`.
  """
  @spec create_group_if_absent(Storage.t(), String.t(), 2 | 3) ::
          :ok | {:error, :exists | term()}
  def create_group_if_absent(storage, prefix, format) do
    [{name, json} | rest] = GroupMetadata.to_documents(%GroupMetadata{zarr_format: format})

    case put_absent(storage, Keys.join(prefix, name), json) do
      {:ok, :created} ->
        Result.each_ok(rest, fn {name, json} ->
          done(put_absent(storage, Keys.join(prefix, name), json))
        end)

      {:ok, :exists} ->
        {:error, :exists}

      error ->
        error
    end
  end

  @doc """
  Read-modify-write of the consolidated metadata of the group at `prefix` (inline in
  `zarr.json` for v3, `.zmetadata` for v2): `fun` gets the stored entries (`nil` when the
  group has none) and answers the new entries, or `nil` to leave them as they are. The
  group's attributes are kept as stored (for v2, `.zmetadata`'s root `.zattrs` is taken from
  `.zattrs`). Returns what was stored.
  """
  @spec update_consolidated(
          Storage.t(),
          String.t(),
          2 | 3,
          (Consolidated.entries() | nil -> Consolidated.entries() | nil)
        ) :: {:ok, Consolidated.entries() | nil} | {:error, term()}
  def update_consolidated(storage, prefix, 3, fun) do
    update_zarr_json(storage, prefix, fn doc ->
      with {:ok, entries} <- Consolidated.from_v3(Map.get(doc, "consolidated_metadata")) do
        case fun.(entries) do
          nil -> {:keep, entries}
          new -> {:ok, Map.put(doc, "consolidated_metadata", Consolidated.to_v3(new)), new}
        end
      end
    end)
  end

  def update_consolidated(storage, prefix, 2, fun) do
    update_json(storage, Keys.join(prefix, ".zmetadata"), fn stored ->
      with {:ok, entries} <- v2_entries(stored) do
        case fun.(entries) do
          nil ->
            {:keep, entries}

          new ->
            with {:ok, zattrs} <- read_optional_json(storage, Keys.join(prefix, ".zattrs")),
                 do: {:ok, Consolidated.to_v2(zattrs || %{}, new), new}
        end
      end
    end)
  end

  defp v2_entries(nil), do: {:ok, nil}

  defp v2_entries(doc) do
    with {:ok, {_zgroup, _zattrs, entries}} <- Consolidated.from_v2(doc), do: {:ok, entries}
  end

  # Read-modify-write of a JSON document: `fun` gets it decoded (`nil` when absent) and answers
  # {:ok, new_document, reply}, {:keep, reply} or an error; -> {:ok, reply}.
  defp update_json(storage, key, fun) do
    change = fn
      nil ->
        json_change(fun.(nil))

      json ->
        with {:ok, doc} <- decode_json(json, key), do: json_change(fun.(doc))
    end

    update(storage, key, change)
  end

  # update_json/3 of the v3 node document at `prefix`, which must exist and be an object.
  defp update_zarr_json(storage, prefix, fun) do
    update_json(storage, Keys.join(prefix, "zarr.json"), fn
      %{} = doc -> fun.(doc)
      nil -> {:error, :not_found}
      _other -> {:error, {:invalid_metadata, "zarr.json is not a JSON object"}}
    end)
  end

  defp json_change({:ok, doc, reply}), do: {:write, JSON.encode(doc), reply}
  defp json_change(keep_or_error), do: keep_or_error

  # Writes `json` at `key` unless something is there: {:ok, :created | :exists}.
  # One conditional put where the store has conditions: nothing needs reading first.
  defp put_absent(storage, key, json) do
    if Storage.conditional_writes?(storage) do
      case Storage.put_if(storage, key, json, :absent) do
        {:ok, _generation} -> {:ok, :created}
        {:error, :generation_mismatch} -> {:ok, :exists}
        error -> error
      end
    else
      update(storage, key, fn
        nil -> {:write, json, :created}
        _stored -> {:keep, :exists}
      end)
    end
  end

  # Storage.update/4 -> {:ok, reply}; stores without conditions under the node-wide lock.
  defp update(storage, key, change) do
    case Storage.update(storage, key, change, without_conditions: :node_lock) do
      {:ok, reply, _generation} -> {:ok, reply}
      error -> error
    end
  end

  defp done({:ok, _reply}), do: :ok
  defp done(error), do: error

  defp put_all(storage, prefix, documents) do
    Result.each_ok(documents, fn {name, json} ->
      Storage.put(storage, Keys.join(prefix, name), json)
    end)
  end

  @doc """
  The paths (relative to `prefix`, sorted) of every node of format `zarr_format` below
  `prefix`. Walks the store one folder at a time through groups only, so the chunks of the
  arrays are never listed; nodes are found below groups (Zarr has no implicit groups).
  """
  @spec list_nodes(Storage.t(), String.t(), 2 | 3) :: {:ok, [String.t()]} | {:error, term()}
  def list_nodes(storage, prefix, zarr_format) do
    with {:ok, paths} <- walk_group(storage, prefix, "", zarr_format), do: {:ok, Enum.sort(paths)}
  end

  defp walk_group(storage, prefix, rel, format) do
    with {:ok, %{prefixes: children}} <- Storage.list_dir(storage, Keys.join(prefix, rel)),
         {:ok, found} <-
           Result.map_ok(children, &walk_child(storage, prefix, Keys.join(rel, &1), format)) do
      {:ok, List.flatten(found)}
    end
  end

  defp walk_child(storage, prefix, rel, format) do
    with {:ok, %{keys: names}} <- Storage.list_dir(storage, Keys.join(prefix, rel)) do
      case node_kind(names, format) do
        :array ->
          {:ok, [rel]}

        :group ->
          with {:ok, below} <- walk_group(storage, prefix, rel, format), do: {:ok, [rel | below]}

        nil ->
          {:ok, []}
      end
    end
  end

  # A v3 folder's kind is only inside its zarr.json; walking an array like a group costs one
  # listing of its chunk folder and finds nothing (a chunk folder holds no zarr.json).
  defp node_kind(names, 3), do: if("zarr.json" in names, do: :group, else: nil)

  defp node_kind(names, 2) do
    cond do
      ".zarray" in names -> :array
      ".zgroup" in names -> :group
      true -> nil
    end
  end

  @doc """
  Normalizes a node path relative to a group and checks every name in it: `"a/b/"` and
  `"/a//b"` are `"a/b"`; a name must not be empty, only dots, or start with `"__"` (reserved),
  and must be valid UTF-8. `""` is the group itself.

      iex> ExZarr.Node.normalize_path("/a//b/")
      {:ok, "a/b"}
      iex> ExZarr.Node.normalize_path("a/../b")
      {:error, {:invalid_node_name, ".."}}
  """
  @spec normalize_path(term()) :: {:ok, String.t()} | {:error, term()}
  def normalize_path(path) when is_binary(path) do
    names = path |> String.replace("\\", "/") |> String.split("/", trim: true)

    case Enum.find(names, &(not valid_name?(&1))) do
      nil -> {:ok, Enum.join(names, "/")}
      bad -> {:error, {:invalid_node_name, bad}}
    end
  end

  def normalize_path(path), do: {:error, {:invalid_node_name, path}}

  defp valid_name?(name) do
    String.valid?(name) and not String.starts_with?(name, "__") and
      String.trim(name, ".") != "" and not String.contains?(name, <<0>>)
  end
end
