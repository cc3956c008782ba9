defmodule ExZarr.Codec.Items do
  @moduledoc false
  # The variable-length counterpart of the native copy kernels: chunks of `:string` and
  # `:bytes` data are tuples of binaries (one per element, in C order), built and cut with
  # index arithmetic over those tuples (a per-element walk is inherent to variable-length data).

  alias ExZarr.Shape

  @typedoc "A source of elements: a tuple in C order of its shape, or one repeated value."
  @type source :: tuple() | {:fill, binary()}

  @doc "True when every item equals `fill`."
  @spec fill?(tuple() | [binary()], binary()) :: boolean()
  def fill?(items, fill) when is_tuple(items), do: fill?(Tuple.to_list(items), fill)
  def fill?(items, fill), do: Enum.all?(items, &(&1 == fill))

  @doc """
  The items of an array of `shape` stored in Fortran order (a tuple), in C order. (A C-order
  tuple of `shape` is the Fortran-order tuple of the reversed shape, so this also turns C-order
  items of the reversed shape into Fortran order.)
  """
  @spec fortran_to_c(tuple(), tuple()) :: [binary()]
  def fortran_to_c(items, shape) do
    dims = Tuple.to_list(shape)
    strides = [1 | dims |> Enum.scan(&(&1 * &2)) |> Enum.drop(-1)]

    if Enum.member?(dims, 0),
      do: [],
      else: items |> gather_axes(Enum.zip(dims, strides), 0, []) |> :lists.reverse()
  end

  # The items at the C-order indices of the axes `{size, stride}` left, from `offset` in
  # `items`, pushed onto `acc` (last first): one `elem/2` per item, no index lists.
  defp gather_axes(items, [], offset, acc), do: [elem(items, offset) | acc]

  defp gather_axes(items, [{size, stride} | rest], offset, acc),
    do: Enum.reduce(0..(size - 1), acc, &gather_axes(items, rest, offset + &1 * stride, &2))

  @doc """
  Builds the elements of an array of `shape` in C order, as a list: every element comes from
  the piece covering it (`{source, source_shape, source_start, start, count}`, like
  `ExZarr.Native.copy_regions/4`), else from `base` (a source of `shape`). The pieces' boxes
  along the axes but the last must coincide or be disjoint (as the parts of a chunk grid are).

      iex> pieces = [{{"x", "y"}, {2}, {0}, {1}, {2}}]
      iex> ExZarr.Codec.Items.assemble({2, 2}, {:fill, ""}, [{{"p", "q", "r", "s"}, {2, 2}, {1, 0}, {0, 1}, {1, 1}}])
      ["", "r", "", ""]
      iex> ExZarr.Codec.Items.assemble({4}, {:fill, "-"}, pieces)
      ["-", "x", "y", "-"]
  """
  @spec assemble(tuple(), source(), [{source(), tuple(), tuple(), tuple(), tuple()}]) :: [
          binary()
        ]
  def assemble({}, base, pieces) do
    if Enum.all?(pieces, &box_piece?(&1, 0)) do
      pieces = Enum.map(pieces, fn {src, {}, {}, {}, {}} -> {src, {1}, {0}, {0}, {1}} end)
      assemble({1}, base, pieces)
    else
      scatter({}, base, pieces)
    end
  end

  def assemble(shape, base, pieces) do
    cond do
      whole?(shape, pieces) -> pieces |> hd() |> elem(0) |> Tuple.to_list()
      Enum.all?(pieces, &box_piece?(&1, tuple_size(shape))) -> assemble_boxes(shape, base, pieces)
      true -> scatter(shape, base, pieces)
    end
  end

  # One piece that is all of its source's items, of the output's shape.
  defp whole?(_shape, [{{:fill, _}, _, _, _, _}]), do: false

  defp whole?(shape, [{src, shape, start, start, shape}]) when is_tuple(src),
    do: Shape.zero?(start)

  defp whole?(_shape, _pieces), do: false

  @doc """
  True when `piece` is a box of `ndim` axes: its source shape, starts and count are tuples of
  `ndim` whole numbers (no index lists, no `{:flat, list}`), as `assemble/3` and
  `ExZarr.Native.vlen_assemble/3` take boxes.
  """
  @spec box_piece?(tuple(), non_neg_integer()) :: boolean()
  def box_piece?({_src, src_shape, src_start, dst_start, count}, ndim),
    do:
      tuple_size(src_shape) == ndim and
        Enum.all?([src_start, dst_start, count], &integers?(&1, ndim))

  defp integers?(t, n) when is_tuple(t) and tuple_size(t) == n,
    do: t |> Tuple.to_list() |> Enum.all?(&is_integer/1)

  defp integers?(_t, _n), do: false

  # Pieces with index lists (or `{:flat, list}` starts addressing a whole array as one flat
  # axis): element by element, later pieces over earlier ones.
  defp scatter(shape, base, pieces) do
    written =
      Enum.reduce(pieces, %{}, fn {src, src_shape, src_start, dst_start, count}, acc ->
        {src_shape, src_start} = flat(src_shape, src_start)
        {dst_shape, dst_start} = flat(shape, dst_start)
        {src_at, dst_at} = {positions(src_start, count), positions(dst_start, count)}
        {src_strides, dst_strides} = {strides_of(src_shape), strides_of(dst_shape)}

        count
        |> Tuple.to_list()
        |> Enum.map(&Enum.to_list(0..(&1 - 1)//1))
        |> product()
        |> Enum.reduce(acc, fn idx, acc ->
          s = offset(idx, src_at, src_strides)
          Map.put(acc, offset(idx, dst_at, dst_strides), elem(src, s))
        end)
      end)

    for i <- 0..(Shape.product(shape) - 1)//1,
        do: Map.get_lazy(written, i, fn -> hd(take_onto(base, i, 1, [])) end)
  end

  defp flat(shape, {:flat, list}), do: {{Shape.product(shape)}, {list}}
  defp flat(shape, start), do: {shape, start}

  # Per axis, the positions of a start: a function of the index along the axis.
  defp positions(start, _count) do
    for s <- Tuple.to_list(start) do
      if is_integer(s),
        do: &(&1 + s),
        else: (fn t -> &elem(t, &1) end).(List.to_tuple(for <<i::64-little <- s>>, do: i))
    end
  end

  defp strides_of(shape), do: shape |> Shape.strides() |> Tuple.to_list()

  defp offset(idx, at, strides),
    do: Enum.zip_with([idx, at, strides], fn [i, f, st] -> f.(i) * st end) |> Enum.sum()

  defp product(lists),
    do:
      Enum.reduce(Enum.reverse(lists), [[]], fn l, acc ->
        for i <- l, rest <- acc, do: [i | rest]
      end)

  defp assemble_boxes(shape, base, pieces) do
    {prefix, [width]} = shape |> Tuple.to_list() |> Enum.split(-1)
    base_strides = strides(shape)

    # Pieces of a regular chunk grid come in bands of equal row boxes: each row a band covers
    # is built from its pieces, by column, and from `base` between them; rows no piece covers
    # come from `base`. The output is consed from its last item to its first, each item once.
    bands =
      for {{lo, hi}, band} <-
            Enum.group_by(Enum.map(pieces, &prepare/1), &{&1.dst_pre, &1.stop_pre}),
          band = Enum.sort_by(band, & &1.dst_last, :desc),
          row <- indices(lo, hi),
          into: %{},
          do: {row, band}

    prefix
    |> Enum.map(fn _ -> 0 end)
    |> indices(prefix)
    |> Enum.reverse()
    |> Enum.reduce([], fn row, acc ->
      offset = dot(row, base_strides)

      case Map.fetch(bands, row) do
        {:ok, band} -> row_onto(band, row, base, offset, width, acc)
        :error -> take_onto(base, offset, width, acc)
      end
    end)
  end

  # Items [0, j) of one output row consed onto `acc`: the band's pieces from the last column
  # to the first (`band` in that order), `base` between and before them.
  defp row_onto([], _row, base, offset, j, acc), do: take_onto(base, offset, j, acc)

  defp row_onto([p | rest], row, base, offset, j, acc) do
    src_offset = p.src_last + dot(Enum.zip_with(row, p.shift, &(&1 + &2)), p.src_strides)
    after_piece = take_onto(base, offset + p.dst_last + p.n, j - p.dst_last - p.n, acc)
    row_onto(rest, row, base, offset, p.dst_last, take_onto(p.src, src_offset, p.n, after_piece))
  end

  # The `n` items of `source` from `offset` consed onto `acc`, the last first.
  defp take_onto(_source, _offset, n, acc) when n <= 0, do: acc
  defp take_onto({:fill, value}, _offset, n, acc), do: repeat_onto(value, n, acc)
  defp take_onto(tuple, offset, n, acc), do: take_back(tuple, offset, offset + n - 1, acc)

  defp repeat_onto(_value, 0, acc), do: acc
  defp repeat_onto(value, n, acc), do: repeat_onto(value, n - 1, [value | acc])

  # The items `first..last` of a tuple consed onto `acc`, the last first.
  defp take_back(tuple, first, last, acc) when last >= first,
    do: take_back(tuple, first, last - 1, [elem(tuple, last) | acc])

  defp take_back(_tuple, _first, _last, acc), do: acc

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

  # Every index (a list) of the box `lo`..`hi` (exclusive), in C order; none when an axis is
  # empty (without walking the other axes, which may be huge).
  defp indices(lo, hi) do
    axes = Enum.zip(lo, hi)

    if Enum.any?(axes, fn {l, h} -> h <= l end) do
      []
    else
      axes
      |> Enum.reverse()
      |> Enum.reduce([[]], fn {l, h}, acc -> for i <- l..(h - 1), rest <- acc, do: [i | rest] end)
    end
  end
end
