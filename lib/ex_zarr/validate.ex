defmodule ExZarr.Validate do
  @moduledoc """
  Checks a stored array or hierarchy, as `mix zarr.validate` does, through the public API
  only (opening nodes, `ExZarr.Storage.list/2`, `ExZarr.Array.read_chunk/3`):

    * every node's metadata conforms to its format (ExZarr's decoder accepts it: required
      fields, types, shapes, data type, fill value, codecs and their configurations);
    * every stored chunk (every shard of a sharded array) decodes, to the size of a chunk:
      the index of a shard is decoded and checked (its checksum, every inner chunk inside
      the shard) and every inner chunk is decoded;
    * no key under an array is outside its chunk grid (a chunk index too large, a key of
      the wrong number of dimensions or encoding, a stray file);
    * on a store that cannot list (HTTP), every chunk of the grid is read instead.

      {:ok, %{problems: [], chunks: 12, nodes: 3}} = ExZarr.Validate.run(group)

  Chunks are read as many at a time as a read of the array would (`max_concurrency:`),
  each decoded chunk dropped before the next: memory stays bounded by one chunk per task.
  """

  alias ExZarr.{Array, DType, Group, Indexing, Metadata, Node, Parallel}
  require DType

  @typedoc "What is wrong where: `path` is the node's, `key` the stored value's (or `nil`)."
  @type problem :: %{path: String.t(), key: String.t() | nil, problem: term()}

  @type report :: %{nodes: non_neg_integer(), chunks: non_neg_integer(), problems: [problem()]}

  @doc """
  Checks an array or a group and everything below it. Options: `progress` (a function
  given the chunks checked and the chunks to check, after each chunk of an array),
  `max_concurrency`. Returns `{:ok, report}`: the problems found (none when all is well),
  the nodes and chunks checked.
  """
  @spec run(Array.t() | Group.t(), keyword()) :: {:ok, report()} | {:error, term()}
  def run(node, opts \\ [])

  def run(%struct{} = node, opts) when struct in [Array, Group] do
    with :ok <- ExZarr.Options.check(opts, [:progress, :max_concurrency]),
         :ok <- check_option(:progress, opts[:progress], &is_function(&1, 2)),
         do: {:ok, check(node, opts, %{nodes: 0, chunks: 0, problems: []})}
  end

  def run(other, _opts), do: {:error, {:invalid_argument, [Array, Group], other}}

  defp check_option(_name, nil, _valid?), do: :ok

  defp check_option(name, value, valid?),
    do: if(valid?.(value), do: :ok, else: {:error, {:invalid_option, name, value}})

  defp check(%Array{} = a, opts, report) do
    path = "/" <> a.prefix

    case chunk_keys(a) do
      {:ok, coords, outside} ->
        problems = for key <- outside, do: problem(path, key, :outside_chunk_grid)
        {checked, bad} = read_chunks(a, coords, opts)
        add(report, 1, checked, problems ++ bad)

      {:error, reason} ->
        add(report, 1, 0, [problem(path, nil, {:cannot_list, reason})])
    end
  end

  defp check(%Group{} = g, opts, report) do
    report = add(report, 1, 0, [])

    case Group.list(g) do
      {:ok, names} ->
        Enum.reduce(names, report, fn name, report ->
          case Group.open(g, name) do
            {:ok, child} -> check(child, opts, report)
            {:error, reason} -> add(report, 1, 0, [problem(child_path(g, name), nil, reason)])
          end
        end)

      {:error, reason} ->
        add(report, 0, 0, [problem(Group.name(g), nil, {:cannot_list_members, reason})])
    end
  end

  defp add(report, nodes, chunks, problems) do
    %{
      nodes: report.nodes + nodes,
      chunks: report.chunks + chunks,
      problems: report.problems ++ problems
    }
  end

  defp child_path(%Group{prefix: ""}, name), do: "/" <> name
  defp child_path(%Group{prefix: prefix}, name), do: "/" <> prefix <> "/" <> name

  defp problem(path, key, what), do: %{path: path, key: key, problem: what}

  # The chunks stored under the array and how many (every chunk of the grid, lazily, where
  # nothing can be listed), and the keys that are neither metadata documents nor chunks of the grid.
  defp chunk_keys(%Array{metadata: meta} = a) do
    case Node.array_keys(a.storage, a.prefix, meta) do
      {:ok, %{chunks: chunks, others: outside}} ->
        {:ok, {Enum.map(chunks, &elem(&1, 1)), length(chunks)}, outside}

      :unlistable ->
        grid = Indexing.grid_shape(meta.shape, meta.chunks)
        {:ok, {Indexing.chunk_coords(meta.shape, meta.chunks), Tuple.product(grid)}, []}

      error ->
        error
    end
  end

  defp read_chunks(a, {coords, total}, opts) do
    progress = Keyword.get(opts, :progress, fn _done, _total -> :ok end)

    concurrency = Parallel.concurrency(:chunks, a.storage, opts)

    path = "/" <> a.prefix

    coords
    |> Parallel.stream(&{:ok, {&1, check_chunk(a, &1)}},
      max_concurrency: concurrency,
      ordered: false
    )
    |> Enum.reduce({0, 0, []}, fn {c, result}, {done, found, bad} ->
      progress.(done + 1, total)

      case result do
        :ok -> {done + 1, found + 1, bad}
        :missing -> {done + 1, found, bad}
        {:error, why} -> {done + 1, found + 1, [problem(path, Array.chunk_key(a, c), why) | bad]}
      end
    end)
    |> then(fn {_done, found, bad} -> {found, Enum.sort_by(bad, & &1.key)} end)
  end

  # A chunk that is not there is fine (it reads as the fill value), and not counted.
  defp check_chunk(a, coords) do
    case Array.read_chunk(a, coords) do
      {:ok, data} -> check_size(a.metadata, Indexing.chunk_shape(a.grid, coords), data)
      {:error, :not_found} -> :missing
      {:error, {:corrupt_chunk, _key, reason}} -> {:error, {:corrupt_chunk, reason}}
      {:error, reason} -> {:error, reason}
    end
  end

  defp check_size(%Metadata{dtype: dtype}, chunks, items) when DType.is_var_len(dtype) do
    expected = Tuple.product(chunks)

    if length(items) == expected,
      do: :ok,
      else: {:error, {:wrong_chunk_size, expected_items: expected, got: length(items)}}
  end

  defp check_size(%Metadata{dtype: dtype}, chunks, data) do
    expected = Tuple.product(chunks) * DType.itemsize(dtype)

    if byte_size(data) == expected,
      do: :ok,
      else: {:error, {:wrong_chunk_size, expected_bytes: expected, got: byte_size(data)}}
  end

  @doc "One line for a person about a problem: where, and what."
  @spec describe(problem()) :: String.t()
  def describe(%{path: path, key: key, problem: what}) do
    where = if key, do: key, else: path
    where <> ": " <> explain(what)
  end

  defp explain(:outside_chunk_grid),
    do: "a key outside the chunk grid (not a chunk of this array)"

  defp explain({:corrupt_chunk, reason}), do: "does not decode: " <> inspect(reason)

  defp explain({:wrong_chunk_size, [{unit, expected}, got: got]}),
    do: "decodes to #{got} #{unit_name(unit)}, a chunk holds #{expected}"

  defp explain({:cannot_list, reason}), do: "cannot list the array's keys: " <> inspect(reason)

  defp explain({:cannot_list_members, reason}),
    do: "cannot list the group's members: " <> inspect(reason)

  defp explain({:invalid_metadata, message}) when is_binary(message),
    do: "metadata does not conform: " <> message

  defp explain(other), do: inspect(other)

  defp unit_name(:expected_items), do: "items"
  defp unit_name(:expected_bytes), do: "bytes"
end
