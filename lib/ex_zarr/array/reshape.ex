defmodule ExZarr.Array.Reshape do
  @moduledoc false
  # The plans of the shape changes `ExZarr.Array.resize/3` and `ExZarr.Array.append/4` carry
  # out through the array's write loop: which chunks a resize clears or deletes (by their
  # coordinates, or by the stored keys when the grid is too large to walk), and which region
  # an append writes, after one conditional update of the stored shape.

  alias ExZarr.{Array, ChunkGrid, Indexing, Limits, Metadata, Node, Shape}
  alias ExZarr.Codec.Pipeline

  @doc """
  A resize of `a` to `new_shape`: the new metadata, the chunks cut by the new border (whose
  part outside it becomes fill) and the chunks wholly outside it (deleted).
  """
  @spec resize(Array.t(), tuple()) ::
          {:ok, Metadata.t(), clear :: [tuple()], delete :: [tuple()]} | {:error, term()}
  def resize(%Array{metadata: meta} = a, new_shape) do
    with {:ok, new_meta} <- Metadata.resize(meta, new_shape),
         %{clear: clear, delete: delete} <-
           Indexing.resize_boxes(meta.shape, new_shape, a.grid),
         {:ok, [clear, delete]} <- chunks_in(a, [clear, delete]),
         do: {:ok, new_meta, clear, delete}
  end

  # The chunks in each list of boxes (see `ExZarr.Indexing.resize_boxes/3`): every coordinate
  # when there are at most `Limits.max_chunk_visits/0` in all, else only the stored chunks
  # (one listing), so that the work follows the chunks stored, not the size of the grid.
  defp chunks_in(a, box_lists) do
    count = Indexing.box_size(Enum.concat(box_lists))

    if count <= Limits.max_chunk_visits() do
      {:ok, Enum.map(box_lists, &Enum.flat_map(&1, fn box -> Indexing.box_coords(box) end))}
    else
      with {:ok, stored} <- stored_chunks(a, count),
           do:
             {:ok,
              Enum.map(box_lists, &Enum.filter(stored, fn c -> Indexing.in_boxes?(c, &1) end))}
    end
  end

  defp stored_chunks(a, count) do
    case Node.array_keys(a.storage, a.prefix, a.metadata) do
      {:ok, %{chunks: chunks}} -> {:ok, Enum.map(chunks, &elem(&1, 1))}
      :unlistable -> {:error, {:too_large, :chunk_visits, count, Limits.max_chunk_visits()}}
      error -> error
    end
  end

  @doc """
  An append of `data` along `axis` (negative counts from the end) to `a`: grows the stored
  shape in one conditional update of the metadata and gives the grown array and what to
  write, `{writer, start, stop}` (`nil` for no data). `writer` is `a` as if the border chunk
  along `axis` were whole inside the array: another append may have grown it already, so it
  is merged into rather than replaced.
  """
  @spec append(Array.t(), binary() | [binary()], integer()) ::
          {:ok, Array.t(), {Array.t(), tuple(), tuple()} | nil} | {:error, term()}
  def append(%Array{metadata: meta} = a, data, axis) do
    shape = meta.shape
    ndim = tuple_size(shape)
    axis = if is_integer(axis) and axis < 0, do: axis + ndim, else: axis

    with :ok <- check_axis(axis, ndim),
         {:ok, count} <- appended_count(a, data, Shape.product(put_elem(shape, axis, 1))),
         {:ok, {old, new}} <- grow(a, axis, count) do
      grown = %{a | metadata: %{meta | shape: new}}
      {:ok, grown, region(a, axis, count, old, new)}
    end
  end

  defp region(_a, _axis, 0, _old, _new), do: nil

  defp region(%Array{metadata: meta} = a, axis, count, old, new) do
    start = put_elem(Shape.zeros(tuple_size(new)), axis, elem(old, axis))
    stop = put_elem(new, axis, elem(old, axis) + count)
    padded = put_elem(new, axis, chunk_end(elem(a.grid, axis), elem(new, axis)))
    {%{a | metadata: %{meta | shape: padded}}, start, stop}
  end

  # Grows the stored shape by `count` along `axis` in one conditional update of the metadata:
  # `{old, new}` shapes, the region between them this append's own. The other dimensions must
  # still be the handle's.
  defp grow(%Array{metadata: meta} = a, axis, count) do
    Node.update_shape(a.storage, a.prefix, fn stored ->
      if put_elem(stored, axis, 0) == put_elem(meta.shape, axis, 0) do
        grown = put_elem(stored, axis, elem(stored, axis) + count)
        with {:ok, m} <- Metadata.resize(meta, grown), do: {:ok, m.shape}
      else
        {:error, {:shape_changed, meta.shape, stored}}
      end
    end)
  end

  # Where the chunk holding the last of `len` positions of an axis ends.
  defp chunk_end(_axis, 0), do: 0

  defp chunk_end(axis, len) do
    c = ChunkGrid.axis_chunk(axis, len - 1)
    ChunkGrid.axis_start(axis, c) + ChunkGrid.axis_size(axis, c)
  end

  defp check_axis(axis, ndim) when is_integer(axis) and axis >= 0 and axis < ndim, do: :ok
  defp check_axis(axis, _ndim), do: {:error, {:invalid_axis, axis}}

  # How many slices along the axis `data` holds; a slice has `slice` elements.
  defp appended_count(a, data, slice) do
    with {:ok, size, unit} <- data_size(a, data) do
      cond do
        slice > 0 and rem(size, slice * unit) == 0 ->
          {:ok, div(size, slice * unit)}

        slice == 0 ->
          {:error, {:cannot_append, "the array has an empty dimension besides the axis"}}

        true ->
          {:error, {:wrong_data_size, expected_multiple_of: slice * unit, got: size}}
      end
    end
  end

  # The size of the caller's data and of one element in it: bytes, or list items.
  defp data_size(%{pipeline: %{layout: :items}}, data) do
    if is_list(data) and not List.improper?(data),
      do: {:ok, length(data), 1},
      else:
        {:error, {:invalid_data, "expected a list of binaries, got #{inspect(data, limit: 3)}"}}
  end

  defp data_size(a, data) do
    with :ok <- Pipeline.check_form(a.pipeline, data),
         do: {:ok, byte_size(data), byte_size(a.fill_element)}
  end
end
