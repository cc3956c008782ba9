defmodule ExZarr.Array.VarLen do
  @moduledoc """
  Chunk I/O and slicing for the variable-length types `:string` and `:bytes`, to which
  `ExZarr.Array` hands these arrays.

  Data goes in and out as a list of binaries in C order (one per element) instead of one
  packed binary:

      {:ok, a} = ExZarr.create(shape: {3}, chunks: {2}, dtype: :string, storage: :memory)
      :ok = ExZarr.Array.set_slice(a, ["a", "bc", "déf"])
      {:ok, ["bc", "déf"]} = ExZarr.Array.get_slice(a, start: {1}, stop: {3})

  Missing chunks read as the fill value (`""` unless set). A chunk is decoded by the
  bytes->bytes codecs and the `vlen-utf8` / `vlen-bytes` codec into a tuple of sub-binaries
  of the decoded chunk; regions are assembled row by row with index arithmetic over those
  tuples (a per-element walk is inherent to variable-length data).

  Of the array->array codecs only a v2 `order: "F"` is supported (items stored in Fortran
  order); zarr-python 3 leaves a v3 `transpose` codec without effect on vlen items, so v3
  transposes are refused. A sharded array (`sharding_indexed` around the vlen codec, as
  zarr-python writes with `shards=`) is read by fetching each touched shard's index and then
  only the inner chunks a selection needs (byte ranges; whole shards from a store that cannot
  serve ranges); it is written a whole shard at a time, encoded inner chunk by inner chunk (all-fill inner chunks are not stored, as in
  zarr-python).
  """

  alias ExZarr.{Array, Indexing, Parallel, Result, Shape, Storage}
  alias ExZarr.Codecs.{ShardingIndexed, VlenBytes, VlenUtf8}

  @serializers %{string: VlenUtf8, bytes: VlenBytes}

  @typedoc "A source of elements: a tuple in C order of its shape, or one repeated value."
  @type source :: tuple() | {:fill, binary()}

  @doc """
  Checks that a variable-length array's pipeline is one this module runs: the type's vlen
  codec as array->bytes codec (possibly inside `sharding_indexed`) and no array->array codecs
  but a v2 `order: "F"`.
  """
  @spec check(ExZarr.Metadata.t(), ExZarr.Codec.Pipeline.t()) :: :ok | {:error, term()}
  def check(meta, pipeline) do
    expected = Map.fetch!(@serializers, meta.dtype)

    case pipeline.array_to_bytes do
      {ShardingIndexed, s} when pipeline.array_to_array == [] -> check(meta, s.inner)
      {serializer, _} -> check_stage(meta, pipeline, serializer, expected)
    end
  end

  defp check_stage(%{dtype: dtype} = meta, pipeline, serializer, expected) do
    cond do
      serializer != expected ->
        {:error,
         {:unsupported_codec, "#{serializer.name()} for #{dtype} data (use #{expected.name()})"}}

      meta.zarr_format == 2 and fortran?(pipeline) ->
        :ok

      pipeline.array_to_array != [] ->
        names = Enum.map(pipeline.array_to_array, fn {m, _} -> m.name() end)
        {:error, {:unsupported_codec, "array->array codecs #{inspect(names)} for #{dtype} data"}}

      true ->
        :ok
    end
  end

  @doc "Reads the box `start:`..`stop:` as a list of binaries in C order (see `ExZarr.Array.get_slice/2`)."
  @spec get_slice(Array.t(), keyword()) :: {:ok, [binary()]} | {:error, term()}
  def get_slice(a, opts) do
    with {:ok, sel} <- Indexing.selection(a.metadata.shape, opts) do
      work =
        case {a.pipeline, Storage.supports_ranges?(a.storage)} do
          {%{array_to_bytes: {ShardingIndexed, s}, bytes_to_bytes: []}, true} ->
            shard_work(a, s, sel)

          _ ->
            chunk_work(a, sel)
        end

      a
      |> run_parallel(work, opts, & &1.())
      |> Result.map_ok(& &1)
      |> case do
        {:ok, pieces} -> {:ok, assemble(sel.shape, {:fill, a.fill_element}, Enum.concat(pieces))}
        error -> error
      end
    end
  end

  # One task per chunk, giving its piece of the selection.
  defp chunk_work(a, sel) do
    chunks = a.metadata.chunks

    for part <- Indexing.plan(sel, chunks) do
      fn ->
        with {:ok, source} <- fetch_or_fill(a, part.chunk),
             do: {:ok, [{source, chunks, part.chunk_start, part.out_start, part.count}]}
      end
    end
  end

  # One task per shard: it fetches the shard's index, then only the inner chunks the selection
  # needs (byte ranges). Missing shards and inner chunks are left to the fill.
  defp shard_work(a, s, sel) do
    per = Shape.zip_with(s.shard_shape, s.chunk_shape, &div/2)

    sel
    |> Indexing.plan(s.chunk_shape)
    |> Enum.group_by(&Shape.zip_with(&1.chunk, per, fn c, n -> div(c, n) end))
    |> Enum.map(fn {shard, parts} -> fn -> shard_pieces(a, s, shard, per, parts) end end)
  end

  defp shard_pieces(a, s, shard, per, parts) do
    key = Array.chunk_key(a, shard)

    case Storage.get(a.storage, key, ShardingIndexed.index_range(s)) do
      {:ok, bytes} ->
        with {:ok, index} <- corrupt(ShardingIndexed.decode_index(s, bytes, nil), key),
             {:ok, pieces} <- Result.map_ok(parts, &inner_part(a, s, key, index, per, &1)),
             do: {:ok, Enum.reject(pieces, &is_nil/1)}

      {:error, :not_found} ->
        {:ok, []}

      error ->
        error
    end
  end

  defp inner_part(a, s, key, index, per, part) do
    local = Shape.zip_with(part.chunk, per, &rem/2)

    case ShardingIndexed.entry(index, ShardingIndexed.linear(s, local)) do
      :empty ->
        {:ok, nil}

      {offset, nbytes} ->
        with {:ok, bytes} <- Storage.get(a.storage, key, {offset, nbytes}),
             {:ok, items} <- corrupt(decode(s.inner, bytes, a.fill_element), key),
             do: {:ok, {items, s.chunk_shape, part.chunk_start, part.out_start, part.count}}
    end
  end

  defp corrupt({:error, reason}, key), do: {:error, {:corrupt_chunk, key, reason}}
  defp corrupt(ok, _key), do: ok

  @doc "Writes a list of binaries (C order, the box's shape) into the box `start:`..`stop:`."
  @spec set_slice(Array.t(), [binary()], keyword()) :: :ok | {:error, term()}
  def set_slice(a, data, opts) do
    with {:ok, sel} <- Indexing.selection(a.metadata.shape, opts),
         {:ok, items} <- check_items(a, data, Shape.product(sel.shape)) do
      input = List.to_tuple(items)
      chunks = a.metadata.chunks

      # Each chunk task gets only its own items (a task copies what it captures).
      work =
        for part <- Indexing.plan(sel, chunks) do
          zero = Tuple.duplicate(0, tuple_size(part.count))
          box = {input, sel.shape, part.out_start, zero, part.count}
          own = List.to_tuple(assemble(part.count, {:fill, nil}, [box]))
          {part, {own, part.count, zero, part.chunk_start, part.count}}
        end

      a
      |> run_parallel(work, opts, fn {part, piece} ->
        with {:ok, base} <- write_base(a, part),
             do: store(a, part.chunk, assemble(chunks, base, [piece]))
      end)
      |> Result.each_ok(& &1)
    end
  end

  @doc """
  Reads one whole chunk (a whole shard for a sharded array) as a list of binaries;
  `{:error, :not_found}` when not stored. `level: :inner` is not supported.
  """
  @spec read_chunk(Array.t(), tuple(), keyword()) :: {:ok, [binary()]} | {:error, term()}
  def read_chunk(a, coords, opts) do
    with :ok <- check_level(opts),
         :ok <- check_chunk(a, coords),
         {:ok, items} <- fetch(a, coords),
         do: {:ok, Tuple.to_list(items)}
  end

  @doc "Stores one whole chunk given as a list of binaries (deleted when all fill)."
  @spec write_chunk(Array.t(), tuple(), [binary()]) :: :ok | {:error, term()}
  def write_chunk(a, coords, data) do
    with :ok <- check_chunk(a, coords),
         {:ok, items} <- check_items(a, data, Shape.product(a.metadata.chunks)),
         do: store(a, coords, items)
  end

  @doc """
  The options of `ExZarr.Array.chunk_stream/2` for a variable-length array: raises
  `ExZarr.Error` for `level: :inner`, which is not supported.
  """
  @spec stream_opts!(keyword()) :: keyword()
  def stream_opts!(opts) do
    case check_level(opts) do
      :ok -> opts
      {:error, reason} -> raise ExZarr.Error, reason: reason
    end
  end

  defp check_level(opts) do
    if Keyword.get(opts, :level) == :inner,
      do: {:error, {:unsupported_option, :level, "inner chunks of variable-length arrays"}},
      else: :ok
  end

  @doc "One whole chunk as a list of binaries, the fill value when it is not stored."
  @spec read_chunk_or_fill(Array.t(), tuple()) :: {:ok, [binary()]} | {:error, term()}
  def read_chunk_or_fill(a, coords) do
    case fetch_or_fill(a, coords) do
      {:ok, {:fill, value}} -> {:ok, List.duplicate(value, Shape.product(a.metadata.chunks))}
      {:ok, items} -> {:ok, Tuple.to_list(items)}
      error -> error
    end
  end

  # -- chunks -------------------------------------------------------------------------------

  defp fetch(a, coords) do
    key = Array.chunk_key(a, coords)

    with {:ok, stored} <- Storage.get(a.storage, key),
         do: corrupt(decode(a.pipeline, stored, a.fill_element), key)
  end

  defp fetch_or_fill(a, coords) do
    case fetch(a, coords) do
      {:error, :not_found} -> {:ok, {:fill, a.fill_element}}
      other -> other
    end
  end

  defp write_base(a, part) do
    extent = Indexing.chunk_extent(a.metadata.shape, a.metadata.chunks, part.chunk)
    zero = Tuple.duplicate(0, tuple_size(extent))

    if part.count == extent and part.chunk_start == zero,
      do: {:ok, {:fill, a.fill_element}},
      else: fetch_or_fill(a, part.chunk)
  end

  defp store(a, coords, items) do
    key = Array.chunk_key(a, coords)
    fill = a.fill_element

    if not a.write_empty_chunks and Enum.all?(items, &(&1 == fill)) do
      Storage.delete(a.storage, key)
    else
      with {:ok, encoded} <- encode(a.pipeline, items, fill),
           do: Storage.put(a.storage, key, encoded)
    end
  end

  defp decode(pipeline, stored, fill) do
    with {:ok, bytes} <- run(Enum.reverse(pipeline.bytes_to_bytes), stored, :decode),
         {:ok, items} <-
           decode_items(pipeline.array_to_bytes, IO.iodata_to_binary(bytes), fill) do
      if fortran?(pipeline),
        do: {:ok, List.to_tuple(fortran_to_c(items, pipeline.chunk_spec.shape))},
        else: {:ok, items}
    end
  end

  defp encode(pipeline, items, fill) do
    items =
      if fortran?(pipeline),
        do: fortran_to_c(List.to_tuple(items), Shape.reverse(pipeline.chunk_spec.shape)),
        else: items

    with {:ok, bytes} <- encode_items(pipeline.array_to_bytes, items, fill),
         do: run(pipeline.bytes_to_bytes, bytes, :encode)
  end

  # Runs bytes->bytes codecs in order; errors name the codec.
  defp run(stages, data, direction) do
    Enum.reduce_while(stages, {:ok, data}, fn {module, s}, {:ok, data} ->
      data = if direction == :decode, do: IO.iodata_to_binary(data), else: data

      case stage(module, direction, [data, s]) do
        {:ok, out} -> {:cont, {:ok, out}}
        error -> {:halt, error}
      end
    end)
  end

  # A v2 `order: "F"` array: one transpose reversing the axes.
  defp fortran?(%{array_to_array: [{ExZarr.Codecs.Transpose, t}], chunk_spec: %{shape: shape}}) do
    n = tuple_size(shape)
    ExZarr.Codecs.Transpose.configuration(t)["order"] == Enum.to_list((n - 1)..0//-1)
  end

  defp fortran?(_pipeline), do: false

  # The elements of a tuple holding an array of `shape` in Fortran order, in C order. (A
  # C-order tuple of `shape` is the Fortran-order tuple of the reversed shape.)
  defp fortran_to_c(items, shape) do
    dims = Tuple.to_list(shape)
    strides = [1 | dims |> Enum.scan(&(&1 * &2)) |> Enum.drop(-1)]
    for idx <- indices(Enum.map(dims, fn _ -> 0 end), dims), do: elem(items, dot(idx, strides))
  end

  defp decode_items({ShardingIndexed, s}, shard, fill) do
    with {:ok, index_bytes} <- ShardingIndexed.index_bytes(s, shard),
         {:ok, index} <- ShardingIndexed.decode_index(s, index_bytes, byte_size(shard)),
         {:ok, pieces} <- Result.map_ok(stored_inner(s, index), &inner_piece(s, shard, &1, fill)) do
      {:ok, List.to_tuple(assemble(s.shard_shape, {:fill, fill}, pieces))}
    end
  end

  defp decode_items({serializer, state}, bytes, _fill),
    do: stage(serializer, :decode, [bytes, state])

  defp stored_inner(s, index) do
    for i <- 0..(s.count - 1)//1,
        (entry = ShardingIndexed.entry(index, i)) != :empty,
        do: {i, entry}
  end

  defp inner_piece(s, shard, {i, {offset, nbytes}}, fill) do
    zero = Tuple.duplicate(0, tuple_size(s.chunk_shape))

    with {:ok, items} <- decode(s.inner, binary_part(shard, offset, nbytes), fill),
         do: {:ok, {items, s.chunk_shape, zero, ShardingIndexed.origin(s, i), s.chunk_shape}}
  end

  defp encode_items({ShardingIndexed, s}, items, fill) do
    shard = List.to_tuple(items)
    zero = Tuple.duplicate(0, tuple_size(s.chunk_shape))

    0..(s.count - 1)//1
    |> Result.map_ok(fn i ->
      piece = {shard, s.shard_shape, ShardingIndexed.origin(s, i), zero, s.chunk_shape}
      inner = assemble(s.chunk_shape, {:fill, fill}, [piece])

      if Enum.all?(inner, &(&1 == fill)),
        do: {:ok, {i, nil}},
        else: with({:ok, enc} <- encode(s.inner, inner, fill), do: {:ok, {i, enc}})
    end)
    |> case do
      {:ok, chunks} ->
        with {:ok, {shard, _index, _stored}} <- ShardingIndexed.build_shard(s, chunks),
             do: {:ok, shard}

      error ->
        error
    end
  end

  defp encode_items({serializer, state}, items, _fill),
    do: stage(serializer, :encode, [items, state])

  defp stage(module, direction, args) do
    case apply(module, direction, args) do
      {:ok, out} -> {:ok, out}
      {:error, reason} -> {:error, {direction, module.name(), reason}}
    end
  end

  defp check_items(a, data, expected),
    do: ExZarr.Codecs.VlenLayout.check_items(data, expected, a.metadata.dtype == :string)

  defp check_chunk(a, coords) do
    if Indexing.valid_chunk?(a.metadata.shape, a.metadata.chunks, coords),
      do: :ok,
      else: {:error, {:invalid_chunk_coords, coords}}
  end

  # Variable-length chunks have no fixed size: 8 bytes per element is the estimate that
  # decides whether parallel chunk tasks pay for themselves.
  defp run_parallel(a, items, opts, fun) do
    estimate = 8 * Shape.product(a.metadata.chunks)
    Parallel.chunks(items, fun, a.storage, estimate, opts)
  end

  # -- assembly -----------------------------------------------------------------------------

  @doc """
  Builds the elements of an array of `shape` in C order, as a list: every element comes from
  the piece covering it (`{source, source_shape, source_start, start, count}`, like
  `ExZarr.Native.copy_regions/4`), else from `base` (a source of `shape`). The pieces' boxes
  along the axes but the last must coincide or be disjoint (as the parts of a chunk grid are).

      iex> pieces = [{{"x", "y"}, {2}, {0}, {1}, {2}}]
      iex> ExZarr.Array.VarLen.assemble({2, 2}, {:fill, ""}, [{{"p", "q", "r", "s"}, {2, 2}, {1, 0}, {0, 1}, {1, 1}}])
      ["", "r", "", ""]
      iex> ExZarr.Array.VarLen.assemble({4}, {:fill, "-"}, pieces)
      ["-", "x", "y", "-"]
  """
  @spec assemble(tuple(), source(), [{source(), tuple(), tuple(), tuple(), tuple()}]) :: [
          binary()
        ]
  def assemble({}, base, pieces) do
    pieces = Enum.map(pieces, fn {src, {}, {}, {}, {}} -> {src, {1}, {0}, {0}, {1}} end)
    assemble({1}, base, pieces)
  end

  def assemble(shape, base, pieces) do
    {prefix, [width]} = shape |> Tuple.to_list() |> Enum.split(-1)
    base_strides = strides(shape)
    base_row = fn row -> take(base, dot(row, base_strides), width) end

    # Pieces of a regular chunk grid come in bands of equal row boxes: each band's rows are
    # built once, from its pieces in column order; rows no piece covers come from `base`.
    covered =
      for {{lo, hi}, band} <-
            Enum.group_by(Enum.map(pieces, &prepare/1), &{&1.dst_pre, &1.stop_pre}),
          band = Enum.sort_by(band, & &1.dst_last),
          row <- indices(lo, hi),
          into: %{},
          do: {row, row_elements(band, row, base, dot(row, base_strides), 0, width)}

    prefix
    |> Enum.map(fn _ -> 0 end)
    |> indices(prefix)
    |> Enum.flat_map(fn row -> Map.get_lazy(covered, row, fn -> base_row.(row) end) end)
  end

  # Elements [j, width) of one output row: pieces in order of their first column, base between.
  defp row_elements([], _row, base, offset, j, width), do: take(base, offset + j, width - j)

  defp row_elements([p | rest], row, base, offset, j, width) do
    src_offset = p.src_last + dot(Enum.zip_with(row, p.shift, &(&1 + &2)), p.src_strides)

    take(base, offset + j, p.dst_last - j) ++
      take(p.src, src_offset, p.n) ++
      row_elements(rest, row, base, offset, p.dst_last + p.n, width)
  end

  defp take(_source, _offset, n) when n <= 0, do: []
  defp take({:fill, value}, _offset, n), do: List.duplicate(value, n)
  defp take(tuple, offset, n), do: for(i <- offset..(offset + n - 1), do: elem(tuple, i))

  defp prepare({src, src_shape, src_start, dst_start, count}) do
    {src_pre, [src_last]} = src_start |> Tuple.to_list() |> Enum.split(-1)
    {dst_pre, [dst_last]} = dst_start |> Tuple.to_list() |> Enum.split(-1)
    {count_pre, [n]} = count |> Tuple.to_list() |> Enum.split(-1)

    %{
      src: src,
      src_strides: strides(src_shape),
      src_last: src_last,
      # source row index = output row index + shift
      shift: Enum.zip_with(src_pre, dst_pre, &(&1 - &2)),
      dst_pre: dst_pre,
      stop_pre: Enum.zip_with(dst_pre, count_pre, &(&1 + &2)),
      dst_last: dst_last,
      n: n
    }
  end

  # Row strides (all axes but the last) of a C-order array.
  defp strides(shape), do: shape |> Shape.strides() |> Tuple.to_list() |> Enum.drop(-1)

  defp dot(index, strides), do: Enum.zip_with(index, strides, &(&1 * &2)) |> Enum.sum()

  # Every index (a list) of the box `lo`..`hi` (exclusive), in C order.
  defp indices(lo, hi) do
    lo
    |> Enum.zip(hi)
    |> Enum.reverse()
    |> Enum.reduce([[]], fn {l, h}, acc -> for i <- l..(h - 1)//1, rest <- acc, do: [i | rest] end)
  end
end
