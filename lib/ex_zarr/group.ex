defmodule ExZarr.Group do
  @moduledoc """
  A Zarr group: a node of a hierarchy that holds arrays and other groups, with attributes.

  Groups are created with `ExZarr.create_group/1` and opened with `ExZarr.open_group/1` (or
  `ExZarr.open/1`, which opens whatever node is at a path). Children are addressed by
  `/`-separated paths relative to the group; creating `"a/b/c"` creates the groups `"a"` and
  `"a/b"` when they are missing (a `.zgroup` for every v2 ancestor, a `zarr.json` for every v3
  parent, as zarr-python does). A group implements `Access` for reading, so `group["a/b"]` is
  the child array or group at that path (or `nil`).

  ## Example: a multiscale image (OME-Zarr 0.4 layout)

  A multiscale image is a group whose `multiscales` attribute names the arrays holding each
  resolution level and says how their pixels map to physical space:

      iex> axes = [
      ...>   %{"name" => "y", "type" => "space", "unit" => "micrometer"},
      ...>   %{"name" => "x", "type" => "space", "unit" => "micrometer"}
      ...> ]
      iex> levels = [{"0", {512, 512}, 0.5}, {"1", {256, 256}, 1.0}, {"2", {128, 128}, 2.0}]
      iex> datasets =
      ...>   for {path, _shape, scale} <- levels do
      ...>     %{"path" => path,
      ...>       "coordinateTransformations" => [%{"type" => "scale", "scale" => [scale, scale]}]}
      ...>   end
      iex> multiscales = [%{"version" => "0.4", "name" => "image", "axes" => axes, "datasets" => datasets}]
      iex> {:ok, image} =
      ...>   ExZarr.create_group(zarr_format: 2, attributes: %{"multiscales" => multiscales})
      iex> for {path, shape, _scale} <- levels do
      ...>   {:ok, _level} =
      ...>     ExZarr.Group.create_array(image, path, shape: shape, chunks: {128, 128}, dtype: :uint16)
      ...> end
      iex> {:ok, image} = ExZarr.open_group(storage: image.storage)
      iex> [%{"datasets" => [%{"path" => finest} | _]}] = ExZarr.Group.attributes(image)["multiscales"]
      iex> image[finest].metadata.shape
      {512, 512}
      iex> {:ok, tree} = ExZarr.Group.tree(image)
      iex> String.split(tree, "\\n", trim: true)
      ["/", "├── 0 (512, 512) uint16", "├── 1 (256, 256) uint16", "└── 2 (128, 128) uint16"]

  The same on disk: `ExZarr.create_group(path: "/tmp/image.ome.zarr", zarr_format: 2, ...)`.

  ## Consolidated metadata

  A group opened with consolidated metadata (`.zmetadata` for v2, zarr-python's inline
  `consolidated_metadata` in `zarr.json` for v3; used by default when present) answers
  `open/3`, `members/2` and `tree/1` from it without further reads. It is a snapshot: see
  `ExZarr.Metadata.Consolidated` and `consolidate/1`.
  """

  @behaviour Access

  alias ExZarr.{Array, Metadata, Node, Options, Result, Storage}
  alias ExZarr.Metadata.{Attributes, Consolidated}
  alias ExZarr.Metadata.Group, as: GroupMetadata
  alias ExZarr.Storage.Keys

  @enforce_keys [:storage, :metadata]
  defstruct [:storage, :metadata, prefix: ""]

  @type t :: %__MODULE__{storage: Storage.t(), metadata: GroupMetadata.t(), prefix: String.t()}

  @typedoc "An array or a group."
  @type zarr_node :: Array.t() | t()

  # The options each function takes (see ExZarr.Options).
  @create_opts [:zarr_format, :attributes, :overwrite]
  @read_opts [:zarr_format, :use_consolidated]
  @open_opts [:write_empty_chunks, :single_writer, :chunk_cache, :recheck]
  # Options of ExZarr.create/1 that create_array/3 sets itself.
  @set_by_create_array [:storage, :path, :cache, :prefix]

  @doc """
  Creates a group at `prefix` in `storage`, with the ancestor groups that are missing.
  Options: `zarr_format` (3 by default), `attributes`, `overwrite` (default false: an existing
  node is an error; true deletes it and everything below it first). Used by
  `ExZarr.create_group/1`.
  """
  @spec create(Storage.t(), String.t(), keyword()) :: {:ok, t()} | {:error, term()}
  def create(storage, prefix, opts \\ [])

  def create(%Storage{} = storage, prefix, opts) do
    with :ok <- Options.check(opts, @create_opts),
         format = Keyword.get(opts, :zarr_format) || 3,
         {:ok, prefix} <- Node.normalize_path(prefix),
         {:ok, meta} <- new_metadata(format, opts),
         :ok <- ensure_ancestors(storage, prefix, format) do
      write_new(storage, prefix, meta, opts)
    end
  end

  def create(storage, _prefix, _opts), do: {:error, {:invalid_argument, Storage, storage}}

  @doc """
  Opens the group at `prefix` in `storage`. Options: `zarr_format` (`nil` detects),
  `use_consolidated` (`nil`: use consolidated metadata when present; `true`: require it;
  `false`: ignore it). Used by `ExZarr.open_group/1`. `{:error, {:not_a_group, prefix}}` when
  an array is there, `{:error, :not_found}` when nothing is.
  """
  @spec read(Storage.t(), String.t(), keyword()) :: {:ok, t()} | {:error, term()}
  def read(storage, prefix, opts \\ [])

  def read(%Storage{} = storage, prefix, opts) do
    with :ok <- Options.check(opts, @read_opts),
         {:ok, prefix} <- Node.normalize_path(prefix) do
      case Node.read_node(storage, prefix, [node_type: :group] ++ opts) do
        {:ok, {:group, meta}} ->
          {:ok, %__MODULE__{storage: storage, prefix: prefix, metadata: meta}}

        {:ok, {:array, _}} ->
          {:error, {:not_a_group, prefix}}

        {:error, :not_found} ->
          not_found_or_array(storage, prefix, opts)

        error ->
          error
      end
    end
  end

  def read(storage, _prefix, _opts), do: {:error, {:invalid_argument, Storage, storage}}

  defp not_found_or_array(storage, prefix, opts) do
    array_opts = [node_type: :array, zarr_format: Keyword.get(opts, :zarr_format)]

    case Node.read_node(storage, prefix, array_opts) do
      {:ok, {:array, _}} -> {:error, {:not_a_group, prefix}}
      _ -> {:error, :not_found}
    end
  end

  # Checked before anything is written (the missing ancestors included).
  defp new_metadata(format, opts) do
    with {:ok, attributes} <- Attributes.normalize(Keyword.get(opts, :attributes, %{})),
         do: {:ok, %GroupMetadata{zarr_format: format, attributes: attributes}}
  end

  defp write_new(storage, prefix, meta, opts) do
    with :ok <- make_room(storage, prefix, Keyword.get(opts, :overwrite, false)),
         :ok <- Node.write_group_metadata(storage, prefix, meta) do
      {:ok, %__MODULE__{storage: storage, prefix: prefix, metadata: meta}}
    end
  end

  @doc """
  Creates a child array at `path` (intermediate groups are created as needed). Options are
  those of `ExZarr.create/1` other than the storage ones; the format is the group's.

      {:ok, temp} = ExZarr.Group.create_array(group, "weather/temperature",
                                              shape: {365, 180, 360}, chunks: {30, 90, 90})
  """
  @spec create_array(t(), String.t(), keyword()) :: {:ok, Array.t()} | {:error, term()}
  def create_array(%__MODULE__{} = group, path, opts) do
    with :ok <- Options.check_keyword(opts),
         :ok <- not_set_by_create_array(opts),
         {:ok, _rel, full} <- child_path(group, path),
         :ok <- same_format(group, opts) do
      # ExZarr.create checks the other options and makes the missing groups above the array
      opts
      |> Keyword.merge(storage: group.storage, prefix: full, zarr_format: format(group))
      |> ExZarr.create()
    end
  end

  def create_array(group, _path, _opts), do: not_a_group(group)

  defp not_set_by_create_array(opts) do
    case Enum.find(@set_by_create_array, &Keyword.has_key?(opts, &1)) do
      nil -> :ok
      key -> {:error, {:unknown_option, key}}
    end
  end

  @doc """
  Creates a child group at `path` (intermediate groups are created as needed). Options:
  `attributes`, `overwrite` (default false).

      {:ok, sub} = ExZarr.Group.create_group(group, "a/b", attributes: %{"note" => "x"})
  """
  @spec create_group(t(), String.t(), keyword()) :: {:ok, t()} | {:error, term()}
  def create_group(group, path, opts \\ [])

  def create_group(%__MODULE__{} = group, path, opts) do
    with :ok <- Options.check(opts, @create_opts),
         {:ok, rel, full} <- child_path(group, path),
         :ok <- same_format(group, opts),
         {:ok, meta} <- new_metadata(format(group), opts),
         :ok <- ensure_parents(group.storage, group.prefix, rel, format(group)) do
      write_new(group.storage, full, meta, opts)
    end
  end

  def create_group(group, _path, _opts), do: not_a_group(group)

  @doc """
  Opens the array or group at `path` below the group (`""` is the group itself). Children of a
  group with consolidated metadata are opened from it without reading the store; a path it
  does not know is looked up in the store. Options: `write_empty_chunks` and `single_writer` for
  arrays.
  `{:error, {:not_found, path}}` when nothing is there.
  """
  @spec open(t(), String.t(), keyword()) :: {:ok, zarr_node()} | {:error, term()}
  def open(group, path, opts \\ [])

  def open(%__MODULE__{} = group, path, opts) do
    with :ok <- Options.check(opts, @open_opts),
         {:ok, rel} <- Node.normalize_path(path) do
      if rel == "", do: {:ok, group}, else: open_child(group, rel, opts)
    end
  end

  def open(group, _path, _opts), do: not_a_group(group)

  # `subtree`: the consolidated entries below `rel` when known (`subtree/2` otherwise).
  defp open_child(group, rel, opts, subtree \\ nil) do
    full = Keys.join(group.prefix, rel)
    node_opts = [zarr_format: format(group)]
    docs = consolidated_documents(group, rel)

    result =
      if docs == %{},
        do: Node.read_node(group.storage, full, node_opts),
        else: Node.decode_node(&fetch_document(docs, &1), node_opts)

    case result do
      {:ok, {:array, meta}} ->
        Array.new(meta, group.storage, [prefix: full] ++ opts)

      {:ok, {:group, meta}} ->
        meta =
          if docs == %{}, do: meta, else: %{meta | consolidated: subtree || subtree(group, rel)}

        {:ok, %__MODULE__{storage: group.storage, prefix: full, metadata: meta}}

      {:error, :not_found} ->
        {:error, {:not_found, rel}}

      error ->
        error
    end
  end

  defp consolidated_documents(%{metadata: %{consolidated: nil}}, _rel), do: %{}

  defp consolidated_documents(%{metadata: %{consolidated: e}}, rel),
    do: Consolidated.documents(e, rel)

  defp subtree(group, rel), do: Consolidated.subtree(group.metadata.consolidated, rel)

  defp fetch_document(docs, name) do
    case Map.fetch(docs, name) do
      {:ok, doc} -> {:ok, doc}
      :error -> {:error, :not_found}
    end
  end

  @doc "Like `open/3` but raises `ExZarr.Error`."
  @spec open!(t(), String.t(), keyword()) :: zarr_node()
  def open!(group, path, opts \\ []), do: Result.unwrap!(open(group, path, opts))

  @doc """
  The members of the group as `[{path, array_or_group}]`, sorted by path: the direct children,
  or with `recursive: true` every node below (paths relative to the group). Read from the
  consolidated metadata when the group has it, else found by listing the store (which lists
  chunk keys too: consolidate big trees).
  """
  @spec members(t(), keyword()) :: {:ok, [{String.t(), zarr_node()}]} | {:error, term()}
  def members(group, opts \\ [])

  def members(%__MODULE__{} = group, opts) do
    with :ok <- Options.check(opts, [:recursive]),
         {:ok, paths} <- member_paths(group) do
      paths = if opts[:recursive], do: paths, else: Enum.reject(paths, &String.contains?(&1, "/"))

      opened = open_members(group, paths)

      with {:ok, nodes} <- Result.map_ok(opened, &member/1),
           do: {:ok, outside_arrays(nodes)}
    end
  end

  def members(group, _opts), do: not_a_group(group)

  defp member({path, {:ok, node}}), do: {:ok, {path, node}}
  defp member({path, {:error, reason}}), do: {:error, {:member, path, reason}}

  # Consolidated members are decoded from documents in memory: no I/O to overlap, and the
  # subtree of every member group comes from one pass over the entries (opening members one
  # by one scanned all entries per member group, after copying them to a task each).
  defp open_members(%{metadata: %{consolidated: %{} = entries}} = group, paths) do
    subtrees = Consolidated.subtrees(entries)
    Enum.map(paths, &{&1, open_child(group, &1, [], Map.get(subtrees, &1, %{}))})
  end

  defp open_members(group, paths), do: concurrently(paths, &{&1, open(group, &1)})

  # Node documents are small: opening many is I/O-bound, so it runs concurrently.
  defp concurrently(items, fun) do
    ExZarr.Parallel.map(items, fun, max_concurrency: ExZarr.Parallel.concurrency(:nodes))
  end

  defp member_paths(%{metadata: %{consolidated: %{} = entries}}),
    do: {:ok, Consolidated.node_paths(entries)}

  defp member_paths(group), do: Node.list_nodes(group.storage, group.prefix, format(group))

  # Nodes stored inside an array's directory are not members of the hierarchy: those with an
  # array among the directories above them.
  defp outside_arrays(nodes) do
    arrays = MapSet.new(for {path, %Array{}} <- nodes, do: path)

    Enum.reject(nodes, fn {path, _} ->
      Enum.any?(:binary.matches(path, "/"), fn {at, 1} ->
        MapSet.member?(arrays, binary_part(path, 0, at))
      end)
    end)
  end

  @doc "The names of the direct children, sorted."
  @spec list(t()) :: {:ok, [String.t()]} | {:error, term()}
  def list(%__MODULE__{} = group) do
    with {:ok, paths} <- member_paths(group) do
      {:ok, Enum.reject(paths, &String.contains?(&1, "/"))}
    end
  end

  def list(group), do: not_a_group(group)

  @doc """
  A printout of the hierarchy below the group, like zarr-python's `Group.tree()`: one line
  per node, arrays with their shape and data type.

      {:ok, text} = ExZarr.Group.tree(group)
      IO.write(text)
      # /
      # ├── labels
      # └── raw (100, 100) uint8
  """
  @spec tree(t()) :: {:ok, String.t()} | {:error, term()}
  def tree(%__MODULE__{} = group) do
    with {:ok, nodes} <- members(group, recursive: true) do
      children = Enum.group_by(nodes, fn {path, _} -> parent(path) end)
      lines = tree_lines(children, "", "")
      {:ok, IO.iodata_to_binary([name(group), "\n" | lines])}
    end
  end

  def tree(group), do: not_a_group(group)

  defp tree_lines(children, key, indent) do
    siblings = Map.get(children, key, [])
    last = length(siblings) - 1

    siblings
    |> Enum.with_index()
    |> Enum.map(fn {{path, node}, i} ->
      {branch, more} = if i == last, do: {"└── ", "    "}, else: {"├── ", "│   "}
      line = [indent, branch, Path.basename(path), describe(node), "\n"]
      [line | tree_lines(children, path, indent <> more)]
    end)
  end

  defp describe(%Array{metadata: meta}),
    do: [" ", python_tuple(Tuple.to_list(meta.shape)), " ", ExZarr.DType.name(meta.dtype)]

  defp describe(%__MODULE__{}), do: []

  defp python_tuple([one]), do: "(#{one},)"
  defp python_tuple(dims), do: "(" <> Enum.join(dims, ", ") <> ")"

  defp parent(path) do
    case Path.dirname(path) do
      "." -> ""
      dir -> dir
    end
  end

  @doc "The group's name as zarr-python shows it: `\"/\"` for the root, else `\"/\" <> path`."
  @spec name(t()) :: String.t()
  def name(%__MODULE__{prefix: prefix}), do: "/" <> prefix

  @doc """
  Deletes the member at `path` with everything stored under it (documents, chunks,
  descendants). When the group has consolidated metadata, the member is removed from it and
  the consolidated metadata is rewritten, as zarr-python does. Returns the updated group.
  """
  @spec delete(t(), String.t()) :: {:ok, t()} | {:error, term()}
  def delete(%__MODULE__{} = group, path) do
    with {:ok, rel, full} <- child_path(group, path),
         {:ok, keys} <- Storage.list(group.storage, full),
         :ok <- if(keys == [], do: {:error, {:not_found, rel}}, else: :ok),
         :ok <- Node.delete_tree(group.storage, full) do
      case group.metadata.consolidated do
        nil ->
          {:ok, group}

        entries ->
          drop = fn stored -> stored && Consolidated.drop(stored, rel) end

          with {:ok, _} <-
                 Node.update_consolidated(group.storage, group.prefix, format(group), drop),
               do: {:ok, put_in(group.metadata.consolidated, Consolidated.drop(entries, rel))}
      end
    end
  end

  def delete(group, _path), do: not_a_group(group)

  @doc """
  Gathers the metadata of every node below the group (read from the store, not from older
  consolidated metadata) into the group's consolidated metadata: `.zmetadata` for v2, inline
  `consolidated_metadata` in `zarr.json` for v3. Returns the group with it.
  `ExZarr.consolidate/1` is the same from the facade.
  """
  @spec consolidate(t()) :: {:ok, t()} | {:error, term()}
  def consolidate(%__MODULE__{} = group) do
    storage = group.storage
    fresh = [zarr_format: format(group), node_type: :group, use_consolidated: false]

    with {:ok, {:group, meta}} <- Node.read_node(storage, group.prefix, fresh),
         {:ok, paths} <- Node.list_nodes(storage, group.prefix, format(group)),
         {:ok, entries} <- read_entries(group, paths),
         {:ok, _} <-
           Node.update_consolidated(storage, group.prefix, format(group), fn _ -> entries end) do
      {:ok, %{group | metadata: %{meta | consolidated: entries}}}
    end
  end

  def consolidate(group), do: not_a_group(group)

  defp read_entries(group, paths) do
    names = Metadata.document_names(format(group))

    keys = for path <- paths, name <- names, do: Keys.join(path, name)

    found = Enum.reject(concurrently(keys, &read_json(group, &1)), &(&1 == {:error, :not_found}))

    with {:ok, docs} <- Result.map_ok(found, & &1),
         do: {:ok, docs |> Map.new() |> drop_below_arrays()}
  end

  # -> {:ok, {key, document}}
  defp read_json(group, key) do
    with {:ok, json} <- Storage.get(group.storage, Keys.join(group.prefix, key)) do
      case ExZarr.JSON.decode(json) do
        {:ok, %{} = doc} -> {:ok, {key, Map.delete(doc, "consolidated_metadata")}}
        {:ok, _other} -> {:error, {:invalid_metadata, "#{key} is not a JSON object"}}
        {:error, {:invalid_json, reason}} -> {:error, {:invalid_json, key, reason}}
      end
    end
  end

  defp drop_below_arrays(entries) do
    arrays =
      for {key, doc} <- entries,
          Path.basename(key) == ".zarray" or match?(%{"node_type" => "array"}, doc),
          do: Path.dirname(key) <> "/"

    Map.reject(entries, fn {key, _} ->
      Enum.any?(arrays, &(String.starts_with?(key, &1) and Path.dirname(key) <> "/" != &1))
    end)
  end

  # -- attributes ---------------------------------------------------------------------------

  @doc "The group's attributes (a map of JSON values)."
  @spec attributes(t()) :: map()
  def attributes(%__MODULE__{metadata: meta}), do: meta.attributes

  @doc """
  Replaces the group's attributes and persists them (`.zattrs` for v2, `zarr.json` for v3).
  Returns the updated group.

      {:ok, group} = ExZarr.Group.set_attributes(group, %{"title" => "run 7"})
  """
  @spec set_attributes(t(), map()) :: {:ok, t()} | {:error, term()}
  def set_attributes(group, attributes), do: change_attributes(group, {:set, attributes})

  @doc "Merges `attributes` into the group's attributes (top-level keys) and persists them."
  @spec update_attributes(t(), map()) :: {:ok, t()} | {:error, term()}
  def update_attributes(group, attributes), do: change_attributes(group, {:update, attributes})

  @doc "Removes attribute keys (missing keys are ignored) and persists the rest."
  @spec delete_attributes(t(), [String.t() | atom()]) :: {:ok, t()} | {:error, term()}
  def delete_attributes(group, keys), do: change_attributes(group, {:delete, keys})

  defp change_attributes(%__MODULE__{} = group, change) do
    with {:ok, meta} <-
           Node.change_attributes(group.storage, group.prefix, {:group, group.metadata}, change),
         do: {:ok, %{group | metadata: meta}}
  end

  defp change_attributes(group, _change), do: not_a_group(group)

  # -- Access -------------------------------------------------------------------------------

  @impl Access
  @doc """
  `group[path]`: the child array or group at `path`, or `nil` when there is none (or `path`
  cannot name one). A child that is there but cannot be opened (damaged metadata, a store
  error) raises `ExZarr.Error`, as `open!/3` does: it is not a missing child.
  """
  def fetch(%__MODULE__{} = group, path) do
    case open(group, path) do
      {:ok, node} ->
        {:ok, node}

      {:error, {why, _path}} when why in [:not_found, :invalid_node_name] ->
        :error

      error ->
        Result.unwrap!(error)
    end
  end

  @impl Access
  @doc false
  def get_and_update(_group, path, _fun) do
    raise ArgumentError,
          "a group's Access is read-only (#{inspect(path)}): use ExZarr.Group.create_array/3, " <>
            "create_group/3 or delete/2"
  end

  @impl Access
  @doc false
  def pop(_group, path) do
    raise ArgumentError,
          "a group's Access is read-only (#{inspect(path)}): use ExZarr.Group.delete/2"
  end

  # -- helpers ------------------------------------------------------------------------------

  defp format(%__MODULE__{metadata: meta}), do: meta.zarr_format

  defp same_format(group, opts) do
    case Keyword.get(opts, :zarr_format, format(group)) do
      format when format == group.metadata.zarr_format -> :ok
      other -> {:error, {:invalid_option, :zarr_format, {other, :group_is, format(group)}}}
    end
  end

  defp child_path(group, path) do
    case Node.normalize_path(path) do
      {:ok, ""} -> {:error, {:invalid_node_name, path}}
      {:ok, rel} -> {:ok, rel, Keys.join(group.prefix, rel)}
      error -> error
    end
  end

  # Every group between `base` (exclusive: it exists) and `base/rel` (exclusive) must exist:
  # missing ones are created, an array in the way is an error.
  defp ensure_parents(storage, base, rel, format) do
    rel
    |> String.split("/")
    |> Enum.drop(-1)
    |> Enum.scan(&Keys.join(&2, &1))
    |> Enum.map(&Keys.join(base, &1))
    |> ensure_groups(storage, format)
  end

  @doc false
  # Makes sure the root and every group above `prefix` exist (creating the missing ones, as
  # zarr-python does for a new node); an array in the way is `{:error, {:parent_is_array, path}}`.
  # Shared with ExZarr.create/1.
  @spec ensure_ancestors(Storage.t(), String.t(), 2 | 3) :: :ok | {:error, term()}
  def ensure_ancestors(_storage, "", _format), do: :ok

  def ensure_ancestors(storage, prefix, format) do
    with :ok <- ensure_groups([""], storage, format),
         do: ensure_parents(storage, "", prefix, format)
  end

  defp ensure_groups(paths, storage, format),
    do: Result.each_ok(paths, &ensure_group(storage, &1, format))

  # A missing group is created on the condition that no node document is there, so that
  # writers creating the same ancestors at once make it once; the one that finds it made
  # looks again at what was made (an array in the way is an error).
  defp ensure_group(storage, prefix, format, look_again? \\ true) do
    opts = [zarr_format: format, use_consolidated: false]

    case Node.read_node(storage, prefix, opts) do
      {:ok, {:group, _}} ->
        :ok

      {:ok, {:array, _}} ->
        {:error, {:parent_is_array, prefix}}

      {:error, :not_found} ->
        case Node.create_group_if_absent(storage, prefix, format) do
          {:error, :exists} when look_again? -> ensure_group(storage, prefix, format, false)
          {:error, :exists} -> {:error, {:parent_is_not_a_group, prefix}}
          other -> other
        end

      error ->
        error
    end
  end

  defp make_room(storage, prefix, overwrite) do
    cond do
      not Node.exists?(storage, prefix) -> :ok
      overwrite -> Node.delete_tree(storage, prefix)
      true -> {:error, {:already_exists, prefix}}
    end
  end

  defp not_a_group(group), do: {:error, {:invalid_argument, __MODULE__, group}}
end

defimpl Inspect, for: ExZarr.Group do
  # The consolidated metadata of a big tree would fill the screen: show its size only.
  def inspect(%ExZarr.Group{metadata: meta} = group, _opts) do
    consolidated =
      case meta.consolidated do
        nil ->
          ""

        entries ->
          ", consolidated: #{length(ExZarr.Metadata.Consolidated.node_paths(entries))} nodes"
      end

    "#ExZarr.Group<#{ExZarr.Group.name(group)} v#{meta.zarr_format}, " <>
      "attributes: #{map_size(meta.attributes)}#{consolidated}>"
  end
end
