defmodule ExZarr.Node do
  @moduledoc false
  # Reads and writes the metadata documents of a node (array or group) at a path in a store:
  # `zarr.json` for Zarr v3, `.zarray` / `.zgroup` / `.zattrs` for Zarr v2.

  alias ExZarr.{JSON, Metadata, Result, Storage}
  alias ExZarr.Metadata.{V2, V3}
  alias ExZarr.Storage.Keys

  @doc "Writes the metadata documents of an array at `prefix`."
  @spec write_array_metadata(Storage.t(), String.t(), Metadata.t()) :: :ok | {:error, term()}
  def write_array_metadata(storage, prefix, %Metadata{} = meta) do
    with {:ok, documents} <- Metadata.to_documents(meta) do
      Result.each_ok(documents, fn {name, json} ->
        Storage.put(storage, Keys.join(prefix, name), json)
      end)
    end
  end

  @doc "True when an array or group is stored at `prefix` (either format)."
  @spec exists?(Storage.t(), String.t()) :: boolean()
  def exists?(storage, prefix) do
    Enum.any?(["zarr.json", ".zarray", ".zgroup"], fn name ->
      match?({:ok, _}, Storage.get(storage, Keys.join(prefix, name), {0, 0}))
    end)
  end

  @doc """
  Deletes every key of the node at `prefix` and below (the whole store for ""), with
  `ExZarr.Storage.delete_prefix/2` (on the filesystem, leftovers of interrupted writes too).
  """
  @spec delete_tree(Storage.t(), String.t()) :: :ok | {:error, term()}
  def delete_tree(storage, prefix), do: Storage.delete_prefix(storage, prefix)

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

  # -- nodes of either kind (groups, hierarchies) --------------------------------------------

  alias ExZarr.{Attributes, Consolidated, GroupMetadata, Result}

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
  Rewrites only the documents that hold a node's attributes: `.zattrs` for v2 (and
  `.zmetadata` for a consolidated v2 group), the whole `zarr.json` for v3 (one atomic put on
  stores whose puts are atomic).
  """
  @spec write_attributes(Storage.t(), String.t(), node_metadata()) :: :ok | {:error, term()}
  def write_attributes(storage, prefix, {:array, %Metadata{zarr_format: 2} = meta}),
    do: put_zattrs(storage, prefix, meta.attributes)

  def write_attributes(storage, prefix, {:array, meta}),
    do: write_array_metadata(storage, prefix, meta)

  def write_attributes(storage, prefix, {:group, %GroupMetadata{zarr_format: 2} = meta}) do
    with :ok <- put_zattrs(storage, prefix, meta.attributes),
         do: write_zmetadata(storage, prefix, meta)
  end

  def write_attributes(storage, prefix, {:group, meta}),
    do: write_group_metadata(storage, prefix, meta)

  @doc """
  Applies an attribute change (see `ExZarr.Attributes.change/2`) to a node's metadata,
  persists it with `write_attributes/3` and returns the new metadata.
  """
  @spec change_attributes(Storage.t(), String.t(), node_metadata(), Attributes.change()) ::
          {:ok, Metadata.t() | GroupMetadata.t()} | {:error, term()}
  def change_attributes(storage, prefix, {kind, meta}, change) do
    with {:ok, attributes} <- Attributes.change(meta.attributes, change),
         meta = %{meta | attributes: attributes},
         :ok <- write_attributes(storage, prefix, {kind, meta}) do
      {:ok, meta}
    end
  end

  defp put_zattrs(storage, prefix, attributes) do
    json = JSON.encode(Metadata.attributes_to_json(attributes))
    Storage.put(storage, Keys.join(prefix, ".zattrs"), json)
  end

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
