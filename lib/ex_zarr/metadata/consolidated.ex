defmodule ExZarr.Metadata.Consolidated do
  @moduledoc """
  Consolidated metadata: the metadata documents of a whole hierarchy gathered into one object,
  so that opening a tree reads one object instead of one or more per node.

  Two layouts are read and written, as zarr-python 3.1 does:

    * Zarr v2: a `.zmetadata` object beside the group's `.zgroup`:
      `{"metadata": {".zgroup": {...}, ".zattrs": {...}, "sub/arr/.zarray": {...}, ...},
      "zarr_consolidated_format": 1}`
    * Zarr v3: inline in the group's `zarr.json`, as zarr-python's (not yet standard)
      `"consolidated_metadata": {"kind": "inline", "must_understand": false,
      "metadata": {"sub": {...}, "sub/arr": {...}}}`, with every node below the group keyed by
      its path and child groups carrying an empty `consolidated_metadata` of their own.

  In memory the consolidated metadata of a group is a map of `t:entries/0`: store keys relative
  to the group (`"sub/arr/zarr.json"`, `"sub/arr/.zarray"`, `"sub/arr/.zattrs"`) to the decoded
  JSON documents, the same documents a reader would otherwise fetch one by one.

  Consolidated metadata is a snapshot. Nodes created, resized or given new attributes after
  `ExZarr.consolidate/1` are not reflected in it until the tree is consolidated again; as in
  zarr-python, keeping it current (or opening with `use_consolidated: false`) is the user's
  choice.
  """

  alias ExZarr.Metadata
  alias ExZarr.Storage.Keys

  @typedoc "Store key relative to the consolidated group -> decoded JSON document."
  @type entries :: %{String.t() => term()}

  @doc """
  Reads the v3 `consolidated_metadata` value of a group's `zarr.json` (`nil` when absent).
  Nested consolidated metadata of child groups, as older zarr-python versions wrote it, is
  flattened. A `kind` other than `"inline"` is ignored when marked `"must_understand": false`;
  inline metadata with a key other than `kind`, `must_understand` and `metadata` is an error.

      iex> ExZarr.Metadata.Consolidated.from_v3(%{"kind" => "inline", "must_understand" => false,
      ...>   "metadata" => %{"a" => %{"zarr_format" => 3, "node_type" => "group"}}})
      {:ok, %{"a/zarr.json" => %{"zarr_format" => 3, "node_type" => "group"}}}
  """
  @spec from_v3(term()) :: {:ok, entries() | nil} | {:error, term()}
  def from_v3(nil), do: {:ok, nil}
  def from_v3(:null), do: {:ok, nil}

  def from_v3(%{"kind" => "inline"} = value)
      when map_size(value) > 3 or
             (map_size(value) == 3 and not is_map_key(value, "must_understand")),
      do: {:error, {:invalid_metadata, "consolidated_metadata has unknown keys"}}

  def from_v3(%{"kind" => "inline", "metadata" => metadata}) when is_map(metadata),
    do: flatten_v3(metadata, "", %{})

  def from_v3(%{"kind" => "inline", "metadata" => :null}), do: {:ok, %{}}
  def from_v3(%{"must_understand" => false}), do: {:ok, nil}

  def from_v3(_other),
    do: {:error, {:invalid_metadata, "consolidated_metadata must be inline metadata"}}

  defp flatten_v3(metadata, base, acc) do
    with {:ok, flat} <- ExZarr.Result.map_ok(Map.to_list(metadata), &flatten_entry(&1, base)),
         do: {:ok, Enum.reduce(flat, acc, &Map.merge(&2, &1))}
  end

  # -> {:ok, entries} of one node and the nodes nested in its consolidated metadata. A path
  # must name a node below the group ("..", "." or empty segments would make a node its own
  # member, or leave the group).
  defp flatten_entry({path, %{} = doc}, base) when is_binary(path) and path != "" do
    full = Keys.join(base, path)
    {nested, doc} = Map.pop(doc, "consolidated_metadata")
    own = %{Keys.join(full, "zarr.json") => doc}

    case {ExZarr.Storage.validate_key(full), nested} do
      {{:error, _}, _} -> bad_entry(path)
      {:ok, %{"metadata" => %{} = children}} -> flatten_v3(children, full, own)
      {:ok, _} -> {:ok, own}
    end
  end

  defp flatten_entry({path, _doc}, _base), do: bad_entry(path)

  defp bad_entry(path),
    do: {:error, {:invalid_metadata, "bad consolidated metadata entry #{inspect(path)}"}}

  @doc """
  The v3 `consolidated_metadata` value for entries, as zarr-python writes it.

      iex> ExZarr.Metadata.Consolidated.to_v3(%{"a/zarr.json" => %{"zarr_format" => 3, "node_type" => "group"}})
      %{"kind" => "inline", "must_understand" => false, "metadata" => %{"a" =>
        %{"zarr_format" => 3, "node_type" => "group", "consolidated_metadata" =>
          %{"kind" => "inline", "must_understand" => false, "metadata" => %{}}}}}
  """
  @spec to_v3(entries()) :: map()
  def to_v3(entries) do
    metadata =
      for {key, doc} <- entries, Path.basename(key) == "zarr.json", into: %{} do
        doc =
          case doc do
            %{"node_type" => "group"} -> Map.put(doc, "consolidated_metadata", inline(%{}))
            _ -> doc
          end

        {node_path(key), doc}
      end

    inline(metadata)
  end

  defp inline(metadata),
    do: %{"kind" => "inline", "must_understand" => false, "metadata" => metadata}

  @doc """
  Reads a v2 `.zmetadata` document. Returns the root group's own `.zgroup` and `.zattrs`
  (`nil` when missing) and the entries of the nodes below it.
  """
  @spec from_v2(term()) :: {:ok, {term(), term(), entries()}} | {:error, term()}
  def from_v2(%{"zarr_consolidated_format" => 1, "metadata" => %{} = metadata}) do
    {root, below} = Map.split(metadata, [".zgroup", ".zattrs"])

    if Enum.all?(Map.keys(below), &v2_document_key?/1),
      do: {:ok, {root[".zgroup"], root[".zattrs"], below}},
      else: {:error, {:invalid_metadata, ".zmetadata has keys that are not v2 documents"}}
  end

  def from_v2(%{"zarr_consolidated_format" => f}) when f != 1,
    do: {:error, {:unsupported_consolidated_format, f}}

  def from_v2(_other), do: {:error, {:invalid_metadata, ".zmetadata is malformed"}}

  # "<node path>/<document>", the node path a valid key below the group.
  defp v2_document_key?(key),
    do:
      Path.basename(key) in Metadata.document_names(2) and String.contains?(key, "/") and
        ExZarr.Storage.validate_key(key) == :ok

  @doc """
  The v2 `.zmetadata` document for a group with attributes `attributes` (already in JSON form)
  and the entries below it.
  """
  @spec to_v2(term(), entries()) :: map()
  def to_v2(attributes, entries) do
    root = %{".zgroup" => %{"zarr_format" => 2}, ".zattrs" => attributes}
    %{"metadata" => Map.merge(entries, root), "zarr_consolidated_format" => 1}
  end

  @doc """
  The paths of the nodes in entries, sorted.

      iex> ExZarr.Metadata.Consolidated.node_paths(%{"a/zarr.json" => %{}, "a/b/.zarray" => %{}, "a/b/.zattrs" => %{}})
      ["a", "a/b"]
  """
  @spec node_paths(entries()) :: [String.t()]
  def node_paths(entries) do
    names = Metadata.document_names(:node)

    for key <- Map.keys(entries),
        Path.basename(key) in names,
        uniq: true do
      node_path(key)
    end
    |> Enum.sort()
  end

  @doc "The documents of the node at `path` in entries, by document name (empty when absent)."
  @spec documents(entries(), String.t()) :: %{String.t() => term()}
  def documents(entries, path) do
    for name <- Metadata.document_names(3) ++ Metadata.document_names(2),
        Map.has_key?(entries, Keys.join(path, name)),
        into: %{},
        do: {name, Map.fetch!(entries, Keys.join(path, name))}
  end

  @doc """
  The entries of the nodes below `path` (not those of `path` itself), with keys made relative
  to it.
  """
  @spec subtree(entries(), String.t()) :: entries()
  def subtree(entries, path) do
    dir = path <> "/"

    for {key, doc} <- entries,
        String.starts_with?(key, dir),
        rel = binary_part(key, byte_size(dir), byte_size(key) - byte_size(dir)),
        String.contains?(rel, "/"),
        into: %{},
        do: {rel, doc}
  end

  @doc """
  `subtree/2` of every node directory at once, in one pass over the entries (a map from the
  directory to its subtree; directories with an empty subtree are absent).

      iex> docs = %{"a/zarr.json" => 1, "a/b/zarr.json" => 2, "a/b/c/zarr.json" => 3}
      iex> ExZarr.Metadata.Consolidated.subtrees(docs)
      %{"a" => %{"b/zarr.json" => 2, "b/c/zarr.json" => 3}, "a/b" => %{"c/zarr.json" => 3}}
  """
  @spec subtrees(entries()) :: %{String.t() => entries()}
  def subtrees(entries) do
    Enum.reduce(entries, %{}, fn {key, doc}, acc ->
      # Each slash but the last ends a directory holding the key below its own node.
      slashes = key |> :binary.matches("/") |> Enum.drop(-1)

      Enum.reduce(slashes, acc, fn {at, 1}, acc ->
        dir = binary_part(key, 0, at)
        rel = binary_part(key, at + 1, byte_size(key) - at - 1)
        Map.update(acc, dir, %{rel => doc}, &Map.put(&1, rel, doc))
      end)
    end)
  end

  @doc "The entries without the node at `path` and everything below it."
  @spec drop(entries(), String.t()) :: entries()
  def drop(entries, path) do
    dir = path <> "/"
    Map.reject(entries, fn {key, _} -> String.starts_with?(key, dir) end)
  end

  defp node_path(key) do
    case Path.dirname(key) do
      "." -> ""
      dir -> dir
    end
  end
end
