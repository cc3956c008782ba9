defmodule ExZarr.ChunkGrid do
  @moduledoc """
  Pure arithmetic of chunk grids: the v3 `regular` grid and the zarr-extensions `rectilinear`
  grid (variable chunk edges per axis, Zarr v3 only).

  A grid is the `chunks` tuple of `ExZarr.Metadata`, one entry per axis: a positive integer
  (a regular axis: every chunk that long, as many as cover the axis) or a non-empty list of
  positive integers (the explicit edge lengths of the axis' chunks, in order; their sum is at
  least the axis' length and may exceed it by whole chunks). A grid with a list axis is
  rectilinear, else regular: `{[31, 28, 31, 30], 100}` has four chunks of 31, 28, 31 and 30
  rows along axis 0 and chunks of 100 columns along axis 1.

  In `zarr.json` a rectilinear grid is
  `{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [...]}}`, each
  axis an integer or a list of edges where `[value, count]` stands for `count` edges of `value`
  (run-length encoding). `from_json/2` expands the runs; `to_json/1` writes a list axis with
  runs of two or more equal edges as `[value, count]` and single edges as integers (the form
  zarrs writes). A rectilinear grid whose axes are all integers is a regular grid and is read
  as one (the two describe the same chunks).

  `compile/1` turns a grid into the form the per-axis functions (`axis_chunk/2`,
  `axis_start/2`, `axis_size/2`, `axis_count/2`) work on in constant or logarithmic time: a
  list axis becomes `{:edges, offsets}`, the tuple of its chunks' start offsets followed by the
  sum of its edges.
  """

  alias ExZarr.Limits

  @typedoc "One axis of a grid: a regular chunk length or the explicit edge lengths."
  @type axis :: pos_integer() | [pos_integer(), ...]

  @typedoc "A grid: one `t:axis/0` per array axis (`ExZarr.Metadata` `chunks`)."
  @type t :: tuple()

  @typedoc "One axis of a compiled grid."
  @type compiled_axis :: pos_integer() | {:edges, tuple()}

  @typedoc "A compiled grid (see `compile/1`); a regular grid compiles to itself."
  @type compiled :: tuple()

  # Edges a rectilinear grid may list, all axes together, after run-length decoding: a bound
  # on the memory a hostile `zarr.json` can make a reader allocate.
  @max_edges 1_000_000

  @doc "The most edges a rectilinear grid may list (all its axes together)."
  @spec max_edges() :: pos_integer()
  def max_edges, do: @max_edges

  @doc """
  True when the grid has a list axis.

      iex> ExZarr.ChunkGrid.rectilinear?({[2, 3], 4})
      true
      iex> ExZarr.ChunkGrid.rectilinear?({2, 4})
      false
  """
  @spec rectilinear?(t()) :: boolean()
  def rectilinear?(chunks) when is_tuple(chunks),
    do: Enum.any?(Tuple.to_list(chunks), &is_list/1)

  @doc """
  Checks a grid against an array shape: one axis per dimension, each a positive integer or a
  non-empty list of positive integers summing to at least the axis' length (at most
  `max_edges/0` edges in all), no edge beyond `ExZarr.Limits.max_extent/0`. `{:error, why}` with a sentence.

      iex> ExZarr.ChunkGrid.check({[2, 3], 4}, {5, 8})
      :ok
      iex> ExZarr.ChunkGrid.check({[2, 2], 4}, {5, 8})
      {:error, "the edges [2, 2] of axis 0 sum to 4, less than its length 5"}
  """
  @spec check(term(), tuple()) :: :ok | {:error, String.t()}
  def check(chunks, shape) when is_tuple(chunks) and tuple_size(chunks) == tuple_size(shape) do
    listed = for axis <- Tuple.to_list(chunks), proper_list?(axis), do: length(axis)

    if Enum.sum(listed) > @max_edges,
      do: {:error, too_many(Enum.sum(listed))},
      else: check_axes(chunks, shape)
  end

  def check(chunks, shape),
    do:
      {:error,
       "expected a tuple of #{tuple_size(shape)} chunk lengths or edge lists, got #{inspect(chunks)}"}

  defp proper_list?(term), do: is_list(term) and not List.improper?(term)

  defp too_many(n), do: "the grid lists #{n} chunks, more than #{@max_edges}"

  defp check_axes(chunks, shape) do
    chunks
    |> Tuple.to_list()
    |> Enum.zip(Tuple.to_list(shape))
    |> Enum.with_index()
    |> Enum.reduce_while(:ok, fn {{axis, size}, k}, :ok ->
      case check_axis(axis, size, k) do
        :ok -> {:cont, :ok}
        error -> {:halt, error}
      end
    end)
  end

  defp check_axis(c, _size, k) when is_integer(c) do
    cond do
      c < 1 -> {:error, "the chunk length of axis #{k} must be positive, got #{c}"}
      c > Limits.max_extent() -> {:error, "the chunk length #{c} of axis #{k} is too large"}
      true -> :ok
    end
  end

  defp check_axis([_ | _] = edges, size, k) do
    cond do
      not proper_list?(edges) ->
        {:error, "the edges of axis #{k} must be a list, got #{inspect(edges)}"}

      not Enum.all?(edges, &(is_integer(&1) and &1 >= 1)) ->
        {:error, "the edges of axis #{k} must be positive integers, got #{inspect(edges)}"}

      Enum.any?(edges, &(&1 > Limits.max_extent())) ->
        {:error, "an edge of axis #{k} is larger than #{Limits.max_extent()}"}

      (sum = Enum.sum(edges)) < size ->
        {:error,
         "the edges #{inspect(edges, limit: 8)} of axis #{k} sum to #{sum}, less than its length #{size}"}

      true ->
        :ok
    end
  end

  defp check_axis(other, _size, k),
    do:
      {:error,
       "axis #{k} must be a positive integer or a non-empty list of them, got #{inspect(other)}"}

  @doc """
  The `chunks:` option of `ExZarr.create/1` when it lists edges: checked (`check/2`) for a v3
  array, refused for v2 (`{:error, {:invalid_option, :chunks, {chunks, why}}}`).
  """
  @spec option(tuple(), tuple(), 2 | 3) :: {:ok, t()} | {:error, term()}
  def option(chunks, _shape, 2),
    do:
      {:error,
       {:invalid_option, :chunks,
        {chunks, "lists of chunk edges (a rectilinear grid) need zarr_format: 3"}}}

  def option(chunks, shape, 3) do
    case check(chunks, shape) do
      :ok -> {:ok, chunks}
      {:error, why} -> {:error, {:invalid_option, :chunks, {chunks, why}}}
    end
  end

  @doc """
  Whether an array of the grid may take a new `shape` (resize, append): the edges of its list
  axes must still cover it, else `{:error, {:shape_beyond_chunk_grid, shape, why}}`.
  """
  @spec check_shape(t(), tuple()) :: :ok | {:error, term()}
  def check_shape(chunks, shape) do
    case check(chunks, shape) do
      :ok -> :ok
      {:error, why} -> {:error, {:shape_beyond_chunk_grid, shape, why}}
    end
  end

  @doc """
  The grid of a v3 `rectilinear` chunk grid's `configuration` for an array of `shape` (a
  list): the runs expanded, checked as `check/2` does. A grid of integers only is the
  regular grid it describes.

      iex> ExZarr.ChunkGrid.from_json(%{"kind" => "inline", "chunk_shapes" => [4, [[1, 3], 3]]}, [6, 6])
      {:ok, {4, [1, 1, 1, 3]}}
      iex> ExZarr.ChunkGrid.from_json(%{"kind" => "inline", "chunk_shapes" => [[[0, 2]]]}, [1])
      {:error, {:invalid_metadata, "rectilinear chunk_shapes: a run [0, 2] of axis 0 must be two positive integers"}}
  """
  @spec from_json(term(), [non_neg_integer()]) :: {:ok, t()} | {:error, term()}
  def from_json(%{"kind" => "inline", "chunk_shapes" => axes} = config, shape)
      when is_list(axes) do
    with :ok <- known_keys(config),
         :ok <- rank(axes, shape),
         {:ok, axes} <- decode_axes(axes),
         chunks = List.to_tuple(axes),
         :ok <- wrap(check(chunks, List.to_tuple(shape))),
         do: {:ok, chunks}
  end

  def from_json(%{"kind" => kind}, _shape) when kind != "inline",
    do: invalid("kind #{inspect(kind)} is not supported (only \"inline\")")

  def from_json(config, _shape),
    do:
      invalid(
        "expected a configuration with \"kind\": \"inline\" and a list \"chunk_shapes\", got #{inspect(config, limit: 8)}"
      )

  defp known_keys(config) do
    case Map.keys(config) -- ["kind", "chunk_shapes"] do
      [] -> :ok
      keys -> invalid("unknown configuration keys #{inspect(keys)}")
    end
  end

  defp rank(axes, shape) when length(axes) == length(shape), do: :ok

  defp rank(axes, shape),
    do: invalid("#{length(axes)} axes for an array of #{length(shape)} dimensions")

  # The axes with their runs expanded; the edges are counted before anything is built.
  defp decode_axes(axes) do
    axes
    |> Enum.with_index()
    |> Enum.reduce_while({:ok, [], 0}, fn {axis, k}, {:ok, acc, total} ->
      case decode_axis(axis, k, total) do
        {:ok, decoded, n} -> {:cont, {:ok, [decoded | acc], total + n}}
        error -> {:halt, error}
      end
    end)
    |> case do
      {:ok, acc, _total} -> {:ok, Enum.reverse(acc)}
      error -> error
    end
  end

  defp decode_axis(c, _k, _total) when is_integer(c), do: {:ok, c, 0}

  defp decode_axis([_ | _] = list, k, total) do
    with {:ok, n} <- count_edges(list, k, 0) do
      if total + n > @max_edges,
        do: invalid(too_many(total + n)),
        else: {:ok, Enum.flat_map(list, &expand/1), n}
    end
  end

  defp decode_axis(other, k, _total),
    do: invalid("axis #{k} must be an integer or a non-empty list, got #{inspect(other)}")

  defp count_edges([], _k, n), do: {:ok, n}

  defp count_edges([e | rest], k, n) when is_integer(e) and e >= 1,
    do: count_edges(rest, k, n + 1)

  defp count_edges([[v, count] | rest], k, n)
       when is_integer(v) and v >= 1 and is_integer(count) and count >= 1,
       do: count_edges(rest, k, n + count)

  defp count_edges([e | _], k, _n) when is_list(e),
    do: invalid("a run #{inspect(e, limit: 4)} of axis #{k} must be two positive integers")

  defp count_edges([e | _], k, _n),
    do: invalid("an edge of axis #{k} must be a positive integer, got #{inspect(e, limit: 4)}")

  defp expand([v, count]), do: List.duplicate(v, count)
  defp expand(v), do: [v]

  defp wrap(:ok), do: :ok
  defp wrap({:error, why}), do: invalid(why)

  defp invalid(why), do: {:error, {:invalid_metadata, "rectilinear chunk_shapes: " <> why}}

  @doc """
  The v3 `chunk_grid` object of a grid: `regular` with `chunk_shape`, or `rectilinear` with
  runs of equal edges written as `[value, count]`.

      iex> ExZarr.ChunkGrid.to_json({[1, 1, 1, 3], 4})
      %{"name" => "rectilinear",
        "configuration" => %{"kind" => "inline", "chunk_shapes" => [[[1, 3], 3], 4]}}
  """
  @spec to_json(t()) :: map()
  def to_json(chunks) do
    axes = Tuple.to_list(chunks)

    if rectilinear?(chunks) do
      %{
        "name" => "rectilinear",
        "configuration" => %{"kind" => "inline", "chunk_shapes" => Enum.map(axes, &encode_axis/1)}
      }
    else
      %{"name" => "regular", "configuration" => %{"chunk_shape" => axes}}
    end
  end

  defp encode_axis(c) when is_integer(c), do: c

  defp encode_axis(edges) do
    edges
    |> Enum.chunk_by(& &1)
    |> Enum.map(fn
      [v] -> v
      [v | _] = run -> [v, length(run)]
    end)
  end

  @doc """
  True when every chunk edge of the grid is a multiple of the regular chunk shape `inner` (the
  inner chunks of a sharded array: then they tile every shard and the whole array alike).

      iex> ExZarr.ChunkGrid.divisible?({[4, 6], 10}, {2, 5})
      true
      iex> ExZarr.ChunkGrid.divisible?({[4, 5], 10}, {2, 5})
      false
  """
  @spec divisible?(t(), tuple()) :: boolean()
  def divisible?(chunks, inner) do
    chunks
    |> Tuple.to_list()
    |> Enum.zip(Tuple.to_list(inner))
    |> Enum.all?(fn
      {edges, c} when is_list(edges) -> Enum.all?(edges, &(rem(&1, c) == 0))
      {s, c} -> rem(s, c) == 0
    end)
  end

  @doc """
  The largest chunk of the grid: the longest edge of each axis.

      iex> ExZarr.ChunkGrid.max_shape({[2, 5, 3], 4})
      {5, 4}
  """
  @spec max_shape(t()) :: tuple()
  def max_shape(chunks), do: map_axes(chunks, fn c -> if is_list(c), do: Enum.max(c), else: c end)

  @doc """
  The grid in the form the per-axis functions take (a compiled grid is returned as it is).

      iex> ExZarr.ChunkGrid.compile({[2, 5], 4})
      {{:edges, {0, 2, 7}}, 4}
  """
  @spec compile(t() | compiled()) :: compiled()
  def compile(chunks) do
    if rectilinear?(chunks), do: map_axes(chunks, &compile_axis/1), else: chunks
  end

  defp compile_axis(c) when is_list(c) do
    {offsets, sum} = Enum.map_reduce(c, 0, fn e, at -> {at, at + e} end)
    {:edges, List.to_tuple(offsets ++ [sum])}
  end

  defp compile_axis(c), do: c

  defp map_axes(chunks, fun), do: chunks |> Tuple.to_list() |> Enum.map(fun) |> List.to_tuple()

  @doc """
  The chunk holding position `x` of an axis (a position past the last edge gives the last
  chunk).

      iex> ExZarr.ChunkGrid.axis_chunk({:edges, {0, 2, 7, 10}}, 6)
      1
      iex> ExZarr.ChunkGrid.axis_chunk(4, 9)
      2
  """
  @spec axis_chunk(compiled_axis(), non_neg_integer()) :: non_neg_integer()
  def axis_chunk(c, x) when is_integer(c), do: div(x, c)
  def axis_chunk({:edges, offsets}, x), do: search(offsets, x, 0, tuple_size(offsets) - 2)

  # The last chunk i in lo..hi whose start is at most x.
  defp search(_offsets, _x, lo, hi) when lo >= hi, do: lo

  defp search(offsets, x, lo, hi) do
    mid = div(lo + hi + 1, 2)

    if elem(offsets, mid) <= x,
      do: search(offsets, x, mid, hi),
      else: search(offsets, x, lo, mid - 1)
  end

  @doc "Where chunk `i` of an axis starts."
  @spec axis_start(compiled_axis(), non_neg_integer()) :: non_neg_integer()
  def axis_start(c, i) when is_integer(c), do: i * c
  def axis_start({:edges, offsets}, i), do: elem(offsets, i)

  @doc "The edge length of chunk `i` of an axis."
  @spec axis_size(compiled_axis(), non_neg_integer()) :: pos_integer()
  def axis_size(c, _i) when is_integer(c), do: c
  def axis_size({:edges, offsets}, i), do: elem(offsets, i + 1) - elem(offsets, i)

  @doc """
  How many chunks hold positions of an axis of length `len` (at most the edges listed).

      iex> ExZarr.ChunkGrid.axis_count({:edges, {0, 2, 7, 10}}, 7)
      2
      iex> ExZarr.ChunkGrid.axis_count(4, 9)
      3
  """
  @spec axis_count(compiled_axis(), non_neg_integer()) :: non_neg_integer()
  def axis_count(_c, 0), do: 0
  def axis_count(c, len) when is_integer(c), do: div(len + c - 1, c)
  def axis_count(axis, len), do: axis_chunk(axis, len - 1) + 1

  @doc """
  True when a position of an axis is a chunk boundary (the start of a chunk or the end of the
  edges).

      iex> ExZarr.ChunkGrid.boundary?({:edges, {0, 2, 7, 10}}, 7)
      true
      iex> ExZarr.ChunkGrid.boundary?(4, 6)
      false
  """
  @spec boundary?(compiled_axis(), non_neg_integer()) :: boolean()
  def boundary?(c, x) when is_integer(c), do: rem(x, c) == 0

  def boundary?({:edges, offsets} = axis, x),
    do: x >= elem(offsets, tuple_size(offsets) - 1) or axis_start(axis, axis_chunk(axis, x)) == x

  @doc """
  The full shape of the chunk at `coords` (edge chunks included whole).

      iex> ExZarr.ChunkGrid.chunk_shape(ExZarr.ChunkGrid.compile({[2, 5], 4}), {1, 7})
      {5, 4}
  """
  @spec chunk_shape(t() | compiled(), tuple()) :: tuple()
  def chunk_shape(grid, coords) do
    grid = compile(grid)

    if regular?(grid),
      do: grid,
      else:
        List.to_tuple(
          for k <- 0..(tuple_size(grid) - 1)//1, do: axis_size(elem(grid, k), elem(coords, k))
        )
  end

  @doc "True when every axis of a (compiled) grid is a regular chunk length."
  @spec regular?(t() | compiled()) :: boolean()
  def regular?(grid), do: Enum.all?(Tuple.to_list(grid), &is_integer/1)
end
