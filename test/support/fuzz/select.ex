defmodule ExZarr.Fuzz.Select do
  @moduledoc """
  The selection calls of a fuzz case (run by `ExZarr.Fuzz.Steps`): `get_`/`set_` +
  `orthogonal`, `coordinates`, `mask` and `blocks` of `ExZarr.Array`, with their selection
  given as a spec (see `ExZarr.Fuzz.Api.selection_op/0`) resolved against the array at hand,
  so that indexes can be relative to its shape: valid ones picked with a seed, the size, one
  below `-size`, ranges of any bounds and steps, lists (unsorted, repeated, negative),
  boolean masks, or any hostile term.

  Each resolved selection is judged by the documented rules on its own (`expect/3`): invalid
  (the call must return an error), valid (the call may fail only when the array is not
  readable; what it reads must be the selected elements of the whole array read with
  `get_slice/2`, in the caller's order; what it writes must read back, the last value winning
  where a position repeats, every other element unchanged), or too big to try (skipped, as
  legitimately slow work). Elements are compared where the whole array is small (at most
  2^16 elements); data is compared after a write only for lossless codecs and types whose
  bytes round-trip (numbers and variable-length strings/bytes).
  """
  import Bitwise

  alias ExZarr.{Array, ChunkGrid, DType, Shape}
  require DType

  @max_elements 1 <<< 16
  @max_chunks 1024
  # Codecs whose decoding does not give back the bytes encoded (or only for some values), by
  # name without the `numcodecs.` prefix.
  @lossy ~w(bitround quantize fixedscaleoffset zfpy astype delta packbits categorize scale_offset
            cast_value)
  @exact_types [:int8, :int16, :int32, :int64, :uint8, :uint16, :uint32, :uint64, :float16] ++
                 [:float32, :float64, :complex64, :complex128, :string, :bytes]

  @doc "The most elements a selection or a write of the fuzzer moves (2^16)."
  @spec max_elements() :: pos_integer()
  def max_elements, do: @max_elements

  @doc """
  The largest span of a valid selection along each axis: about 2^16 elements over about 1024
  chunks of a regular grid at most (more is legitimately slow: 65,536 one-element chunks
  through lzma take 17 s).
  """
  @spec spans(map()) :: [pos_integer()]
  def spans(%{shape: shape, chunks: chunks}) do
    dims = Tuple.to_list(shape)
    root = &max(1, floor(:math.pow(&1, 1 / max(length(dims), 1))))
    chunk_sizes = if ChunkGrid.regular?(chunks), do: Tuple.to_list(chunks), else: dims
    Enum.map(chunk_sizes, &max(1, min(root.(@max_elements), &1 * root.(@max_chunks))))
  end

  @doc "Runs a get (`data` unused) or a set of a selection spec on an array; the step's result."
  @spec run(:get | :set, atom(), term(), (non_neg_integer() -> term()), Array.t()) :: term()
  def run(dir, kind, spec, data_fun, a) do
    arg = resolve(kind, spec, a.metadata)

    case expect(kind, arg, a.metadata) do
      :too_big -> :skip
      expected -> call(dir, kind, arg, expected, data_fun, a)
    end
  end

  defp call(:get, kind, arg, expected, _data_fun, a) do
    # the whole array is compared with a valid selection's result only
    whole = if match?({:ok, _, _}, expected), do: whole(a)
    result = apply(Array, :"get_#{kind}", [a, arg])
    check(result, expected, whole, fn data -> elements(a, data) end, "get_#{kind}")
  end

  defp call(:set, kind, arg, expected, data_fun, a) do
    count = count(expected)
    data = data_fun.(count)
    before = whole(a)
    result = apply(Array, :"set_#{kind}", [a, arg, data])

    with :ok <- result,
         true <- is_tuple(before) and exact?(a, data, count),
         {:ok, _count, positions} <- expected do
      check_written(a, before, positions, elements(a, data), "set_#{kind}")
    else
      _ -> check(result, expected, nil, &elements(a, &1), "set_#{kind}")
    end
  end

  defp count({:ok, count, _positions}), do: count
  defp count(_expected), do: 4

  # An invalid selection must be refused; a valid one of a readable array must be read, as
  # the selected elements of the whole array.
  defp check({:error, _} = result, {:ok, _, _}, whole, _elements, name) when is_tuple(whole),
    do:
      {:wrong,
       "#{name} of a valid selection failed though the whole array reads: #{short(result)}"}

  defp check(:ok, :invalid, _whole, _elements, name), do: accepted(name)
  defp check({:ok, _}, :invalid, _whole, _elements, name), do: accepted(name)

  defp check({:ok, data} = result, {:ok, count, positions}, whole, elements, name) do
    got = elements.(data)

    cond do
      got == :error ->
        {:wrong, "#{name} returned #{short(data)}, not elements of the array's type"}

      length(got) != count ->
        {:wrong, "#{name} returned #{length(got)} elements, expected #{count}"}

      is_tuple(whole) and got != Enum.map(positions.(), &elem(whole, &1)) ->
        {:wrong, "#{name} returned other elements than the whole array holds there"}

      true ->
        result
    end
  end

  defp check(result, _expected, _whole, _elements, _name), do: result

  defp accepted(name), do: {:wrong, "#{name} accepted an invalid selection"}

  # After a write: the written positions hold the data (last value wins), the others are
  # unchanged.
  defp check_written(a, before, positions, data, name) do
    expected =
      positions.() |> Enum.zip(data) |> Enum.reduce(before, fn {i, v}, t -> put_elem(t, i, v) end)

    case whole(a) do
      ^expected ->
        :ok

      nil ->
        {:wrong, "#{name} succeeded but the array no longer reads whole"}

      after_write when tuple_size(after_write) != tuple_size(expected) ->
        {:wrong, "#{name} succeeded but the array reads #{tuple_size(after_write)} elements"}

      after_write ->
        i =
          Enum.find(0..(tuple_size(expected) - 1), &(elem(expected, &1) != elem(after_write, &1)))

        {:wrong,
         "#{name} wrote element #{i} as #{short(elem(after_write, i))}, expected #{short(elem(expected, i))}"}
    end
  end

  # The whole array's elements as a tuple, when it is small and reads; else nil.
  defp whole(a) do
    with true <- Shape.product(a.metadata.shape) <= @max_elements,
         {:ok, data} <- Array.get_slice(a, []),
         [_ | _] = list <- elements(a, data) do
      List.to_tuple(list)
    else
      [] -> {}
      _ -> nil
    end
  end

  # Data of a set that reads back as written: `:fit` data of a type whose bytes round-trip,
  # through lossless codecs.
  defp exact?(a, data, count) do
    elements = elements(a, data)

    a.metadata.dtype in @exact_types and elements != :error and length(elements) == count and
      not Enum.any?(codec_names(a.metadata.codecs), &(&1 in @lossy))
  end

  # Every codec's name in a pipeline, those inside sharding included (string keys there).
  defp codec_names(codecs) when is_list(codecs), do: Enum.flat_map(codecs, &codec_names/1)

  defp codec_names(%{} = spec) do
    name = Map.get(spec, :name, Map.get(spec, "name"))
    config = Map.get(spec, :configuration, Map.get(spec, "configuration")) || %{}

    inner =
      codec_names(Map.get(config, "codecs", [])) ++
        codec_names(Map.get(config, "index_codecs", []))

    [String.replace_prefix(name, "numcodecs.", "") | inner]
  end

  defp elements(a, data) do
    dtype = a.metadata.dtype

    cond do
      DType.is_var_len(dtype) and is_list(data) ->
        data

      DType.is_var_len(dtype) ->
        :error

      not is_binary(data) ->
        :error

      (size = DType.itemsize(dtype)) > 0 and rem(byte_size(data), size) == 0 ->
        for <<x::binary-size(size) <- data>>, do: x

      true ->
        :error
    end
  end

  @doc "True for a fixed-size type whose written bytes read back as they are (numbers)."
  @spec exact_fixed?(ExZarr.DType.t()) :: boolean()
  def exact_fixed?(dtype), do: dtype in @exact_types and not DType.is_var_len(dtype)

  @doc """
  Distinct elements for a write of `count` elements of a fixed-size number type: every byte
  non-zero and each float finite and positive (so that no element equals the fill value or
  another element by value but not by bytes).
  """
  @spec distinct(ExZarr.DType.t(), non_neg_integer()) :: binary()
  def distinct(dtype, count) do
    size = DType.itemsize(dtype)

    for j <- 0..(count - 1)//1, into: <<>> do
      element =
        <<rem(j, 250) + 1, rem(div(j, 250), 60) + 1>> <> :binary.copy(<<1>>, max(size - 2, 0))

      binary_part(element, 0, size)
    end
  end

  # -- resolving specs ----------------------------------------------------------------------

  @doc "The selection argument a spec stands for on an array of the given metadata."
  @spec resolve(atom(), term(), map()) :: term()
  def resolve(:orthogonal, {:axes, entries, delta, form}, meta),
    do: shape_form(axes(entries, delta, Tuple.to_list(meta.shape), spans(meta)), form)

  def resolve(:blocks, {:axes, entries, delta, form}, meta) do
    grid =
      meta.shape |> ExZarr.Indexing.grid_shape(ChunkGrid.compile(meta.chunks)) |> Tuple.to_list()

    spans = meta |> spans() |> Enum.zip(Tuple.to_list(meta.chunks)) |> Enum.map(&block_span/1)
    shape_form(axes(entries, delta, grid, spans), form)
  end

  def resolve(:coordinates, {:points, seed, n, edits}, meta) do
    :rand.seed(:exsss, {seed, 13, 17})
    dims = Tuple.to_list(meta.shape)
    n = if Enum.all?(dims, &(&1 > 0)), do: n, else: 0
    points = for _ <- 1..n//1, do: dims |> Enum.map(&index/1) |> List.to_tuple()
    # A repeated point, not next to the first.
    points = if n >= 3, do: points ++ [hd(points)], else: points
    Enum.reduce(edits, points, &edit_point(&1, &2, dims))
  end

  def resolve(:mask, {:mask, seed, k, form}, meta) do
    :rand.seed(:exsss, {seed, 19, 23})
    size = Shape.product(meta.shape)
    mask = if size <= @max_elements, do: mask(size, k), else: <<1>>

    case form do
      :exact -> mask
      {:off_by, d} when d >= 0 -> mask <> :binary.copy(<<1>>, d)
      {:off_by, d} -> binary_part(mask, 0, max(byte_size(mask) + d, 0))
      :booleans -> for <<b <- mask>>, do: b != 0
      :bits -> <<mask::bitstring, 1::3>>
    end
  end

  def resolve(_kind, {:term, term}, _meta), do: resolve_term(term)

  # Block indexes along an axis: as many blocks as fit the span (at least one).
  defp block_span({span, chunk}) when is_integer(chunk) and chunk > 0,
    do: max(1, div(span, chunk))

  defp block_span({_span, _chunk}), do: 1

  defp shape_form(entries, :tuple), do: List.to_tuple(entries)
  defp shape_form([entry], :bare), do: entry
  defp shape_form(entries, :bare), do: List.to_tuple(entries)
  defp shape_form(entries, :list), do: entries

  # One entry per axis (cycling through the specs), `delta` more or fewer.
  defp axes(entries, delta, dims, spans) do
    n = max(length(dims) + delta, 0)
    sizes = Stream.concat(dims, Stream.repeatedly(fn -> 1 end))
    spans = Stream.concat(spans, Stream.repeatedly(fn -> 1 end))

    entries
    |> Stream.cycle()
    |> Stream.zip(Stream.zip(sizes, spans))
    |> Enum.take(n)
    |> Enum.map(fn {entry, {size, span}} -> entry(entry, size, span) end)
  end

  defp entry({:int, seed}, size, _span) do
    :rand.seed(:exsss, {seed, 29, 31})
    index(size)
  end

  defp entry({:range, seed, step}, size, span) do
    :rand.seed(:exsss, {seed, 37, 41})
    lo = if size > 0, do: :rand.uniform(size) - 1, else: 0
    hi = min(size - 1, lo + :rand.uniform(span) - 1)
    %Range{first: end_form(lo, size), last: end_form(hi, size), step: step}
  end

  defp entry({:all, seed}, size, span) when size > span, do: entry({:range, seed, 1}, size, span)
  defp entry({:all, _seed}, _size, _span), do: :all

  defp entry({:list, seed, n}, size, _span) do
    :rand.seed(:exsss, {seed, 43, 47})
    list = for _ <- 1..n//1, size > 0, do: index(size)
    if n >= 2 and size > 0, do: list ++ [hd(list)], else: list
  end

  defp entry({:bools, seed}, size, _span) when size <= 4096 do
    :rand.seed(:exsss, {seed, 53, 59})
    for _ <- 1..size//1, do: :rand.uniform(3) == 1
  end

  defp entry({:bools, _seed}, _size, _span), do: [true]

  defp entry({:range_of, first, last, step}, size, _span),
    do: %Range{first: bound(first, size), last: bound(last, size), step: step}

  defp entry({:edge, edge}, size, _span), do: bound(edge, size)
  defp entry({:term, term}, _size, _span), do: resolve_term(term)

  # A valid index of an axis of `size`, given as from the start or from the end.
  defp index(size) when size <= 0, do: 0

  defp index(size) do
    i = :rand.uniform(size) - 1
    end_form(i, size)
  end

  defp end_form(i, size), do: if(:rand.uniform(2) == 1, do: i, else: i - size)

  defp bound({:size, d}, size), do: size + d
  defp bound({:neg_size, d}, size), do: -size + d
  defp bound(other, _size), do: resolve_term(other)

  defp resolve_term(:improper), do: [0 | 1]
  defp resolve_term(term), do: term

  defp edit_point({at, kind}, points, dims) do
    bad =
      case kind do
        :short ->
          dims |> Enum.drop(1) |> Enum.map(fn _ -> 0 end) |> List.to_tuple()

        :long ->
          List.to_tuple([0 | Enum.map(dims, fn _ -> 0 end)])

        :list ->
          Enum.map(dims, fn _ -> 0 end)

        {:coord, k, edge} ->
          dims
          |> Enum.map(fn _ -> 0 end)
          |> List.replace_at(k, bound(edge, Enum.at(dims, k, 1)))
          |> List.to_tuple()

        {:term, term} ->
          resolve_term(term)
      end

    if points == [], do: [bad], else: List.replace_at(points, rem(at, length(points)), bad)
  end

  defp mask(size, k) do
    picked = MapSet.new(1..k//1, fn _ -> :rand.uniform(max(size, 1)) - 1 end)

    for i <- 0..(size - 1)//1,
        into: <<>>,
        do: if(i in picked, do: <<:rand.uniform(255)>>, else: <<0>>)
  end

  # -- what a selection must do, by the documented rules --------------------------------------

  @doc """
  What a selection must do on an array of the given metadata: `:invalid`, `{:ok, count,
  positions}` (`positions` a function giving the selected elements' C-order linear indices in
  the caller's order), `:unknown` (a rectilinear grid's blocks), or `:too_big` (valid, more
  than 2^16 elements or about 4096 chunks).
  """
  @spec expect(atom(), term(), map()) ::
          :invalid | :unknown | :too_big | {:ok, non_neg_integer(), (() -> [non_neg_integer()])}
  def expect(:orthogonal, sel, meta) do
    sel = if is_tuple(sel), do: sel, else: {sel}
    dims = Tuple.to_list(meta.shape)

    with true <- tuple_size(sel) == length(dims) || :invalid,
         axes = Enum.zip_with(Tuple.to_list(sel), dims, &ortho_axis/2),
         true <- Enum.all?(axes, &is_list/1) || :invalid do
      bounded(axes, meta)
    end
  end

  def expect(:blocks, sel, meta) do
    sel = if is_tuple(sel), do: sel, else: {sel}
    dims = Tuple.to_list(meta.shape)
    chunks = Tuple.to_list(meta.chunks)

    cond do
      tuple_size(sel) != length(dims) ->
        :invalid

      not ChunkGrid.regular?(meta.chunks) or Enum.any?(chunks, &(&1 < 1)) ->
        :unknown

      true ->
        axes =
          Enum.zip_with([Tuple.to_list(sel), dims, chunks], fn [e, n, c] ->
            block_axis(e, n, c)
          end)

        if Enum.all?(axes, &is_list/1), do: bounded(axes, meta), else: :invalid
    end
  end

  def expect(:coordinates, points, meta) do
    dims = Tuple.to_list(meta.shape)

    with true <- (is_list(points) and not List.improper?(points)) || :invalid,
         linear = Enum.map(points, &point(&1, dims)),
         true <- Enum.all?(linear, &is_integer/1) || :invalid do
      {:ok, length(linear), fn -> linear end}
    end
  end

  def expect(:mask, mask, meta) do
    if is_binary(mask) and byte_size(mask) == Shape.product(meta.shape) do
      positions = for {b, i} <- Enum.with_index(:binary.bin_to_list(mask)), b != 0, do: i
      {:ok, length(positions), fn -> positions end}
    else
      :invalid
    end
  end

  # Valid axes (lists of positions along each) within the bounds of a fuzz step.
  defp bounded(axes, meta) do
    count = axes |> Enum.map(&length/1) |> Enum.reduce(1, &(&1 * &2))

    if count > @max_elements or chunks_touched(axes, meta.chunks) > 4 * @max_chunks do
      :too_big
    else
      strides = meta.shape |> Tuple.to_list() |> strides()

      {:ok, count,
       fn ->
         axes
         |> Enum.zip(strides)
         |> Enum.reduce([0], fn {axis, s}, acc -> for base <- acc, i <- axis, do: base + i * s end)
       end}
    end
  end

  defp chunks_touched(axes, chunks) do
    if ChunkGrid.regular?(chunks) do
      axes
      |> Enum.zip(Tuple.to_list(chunks))
      |> Enum.map(fn {axis, c} ->
        axis |> Enum.map(&div(&1, max(c, 1))) |> Enum.uniq() |> length()
      end)
      |> Enum.reduce(1, &(&1 * &2))
    else
      axes |> Enum.map(&length/1) |> Enum.reduce(1, &(&1 * &2))
    end
  end

  defp strides(dims) do
    dims
    |> Enum.reverse()
    |> Enum.map_reduce(1, fn n, acc -> {acc, acc * n} end)
    |> elem(0)
    |> Enum.reverse()
  end

  # An orthogonal entry's positions along an axis of `size` (in the caller's order), or :invalid.
  defp ortho_axis(i, size) when is_integer(i), do: with({:ok, i} <- norm(i, size), do: [i])
  defp ortho_axis(:all, size), do: positions(0, size - 1, 1)

  defp ortho_axis(%Range{first: first, last: last, step: step}, size)
       when is_integer(first) and is_integer(last) and is_integer(step) and step >= 1 do
    a = if first < 0, do: first + size, else: first
    b = if last < 0, do: last + size, else: last

    cond do
      a > b -> []
      a < 0 or b >= size -> :invalid
      true -> positions(a, b, step)
    end
  end

  defp ortho_axis(list, size) when is_list(list) do
    cond do
      List.improper?(list) ->
        :invalid

      list != [] and Enum.all?(list, &is_boolean/1) and length(list) == size ->
        for {true, i} <- Enum.with_index(list), do: i

      Enum.all?(list, &is_integer/1) ->
        list |> Enum.map(&norm(&1, size)) |> all_ok()

      true ->
        :invalid
    end
  end

  defp ortho_axis(_other, _size), do: :invalid

  # Blocks along an axis of `size` in chunks of `c`: an index or a step-1 range of the grid.
  defp block_axis(e, size, c) do
    grid = if size == 0, do: 0, else: div(size + c - 1, c)

    case e do
      :all ->
        positions(0, size - 1, 1)

      i when is_integer(i) ->
        with {:ok, i} <- norm(i, grid), do: block_positions(i, i, size, c)

      %Range{first: first, last: last, step: 1} = r when is_integer(first) and is_integer(last) ->
        with [lo | _] = blocks <- ortho_axis(r, grid),
             do: block_positions(lo, List.last(blocks), size, c)

      _ ->
        :invalid
    end
  end

  defp block_positions(lo, hi, size, c), do: positions(lo * c, min((hi + 1) * c, size) - 1, 1)

  # The positions a..b by step, at most one more than @max_elements (more is :too_big anyway).
  defp positions(a, b, step), do: Enum.to_list(a..min(b, a + step * @max_elements)//step)

  defp point(point, dims) when is_tuple(point) and tuple_size(point) == length(dims) do
    point
    |> Tuple.to_list()
    |> Enum.zip(dims)
    |> Enum.map(fn {i, n} -> norm(i, n) end)
    |> all_ok()
    |> case do
      list when is_list(list) ->
        list |> Enum.zip(strides(dims)) |> Enum.map(fn {i, s} -> i * s end) |> Enum.sum()

      :invalid ->
        :invalid
    end
  end

  defp point(_point, _dims), do: :invalid

  defp norm(i, size) when is_integer(i) and i >= 0 and i < size, do: {:ok, i}
  defp norm(i, size) when is_integer(i) and i < 0 and i >= -size, do: {:ok, i + size}
  defp norm(_i, _size), do: :invalid

  defp all_ok(results) do
    if Enum.all?(results, &match?({:ok, _}, &1)),
      do: Enum.map(results, &elem(&1, 1)),
      else: :invalid
  end

  defp short(term), do: inspect(term, limit: 8, printable_limit: 60) |> String.slice(0, 200)
end
