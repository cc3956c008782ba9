defmodule ExZarr.Array.Pipelines do
  @moduledoc false
  # The codec pipelines of an array's chunks, built when the array is opened. A regular grid
  # has one chunk shape and one pipeline. A rectilinear grid has the array's pipeline for its
  # largest chunk and one for each other chunk shape (a sharded pipeline keeps its shard
  # indexes cached per pipeline) when there are at most @max_shapes shapes; past that,
  # `ExZarr.Array` builds one per use.

  alias ExZarr.{ChunkGrid, Metadata, Result}
  alias ExZarr.Codec.Pipeline

  @max_shapes 256

  @doc """
  The array's pipeline (for its largest chunk) and the pipelines of its other chunk shapes,
  for `meta`; a sharded rectilinear grid whose inner chunks do not divide every shard edge is
  an error.
  """
  @spec build(Metadata.t()) ::
          {:ok, Pipeline.t(), %{tuple() => Pipeline.t()}} | {:error, term()}
  def build(%Metadata{} = meta) do
    spec = %{
      shape: ChunkGrid.max_shape(meta.chunks),
      dtype: meta.dtype,
      fill_value: meta.fill_value,
      decoded_size: nil
    }

    with {:ok, pipeline} <- Pipeline.new(meta.codecs, spec, zarr_format: meta.zarr_format),
         :ok <- check_grid(meta, pipeline),
         {:ok, others} <- shape_pipelines(meta, spec),
         do: {:ok, pipeline, others}
  end

  # The inner chunks of a rectilinear grid of shards must divide every shard edge (the
  # pipeline checked its largest shard only), so that they tile the whole array regularly.
  defp check_grid(meta, pipeline) do
    case Pipeline.inner_chunk_shape(pipeline) do
      {:ok, inner} ->
        if ChunkGrid.divisible?(meta.chunks, inner),
          do: :ok,
          else:
            {:error,
             {:invalid_codec_config, "sharding_indexed",
              "chunk_shape #{inspect(Tuple.to_list(inner))} must divide every shard edge of the chunk grid"}}

      {:error, :not_sharded} ->
        :ok
    end
  end

  defp shape_pipelines(meta, spec) do
    shapes =
      meta.chunks
      |> Tuple.to_list()
      |> Enum.map(&(&1 |> List.wrap() |> Enum.uniq()))

    if ChunkGrid.regular?(meta.chunks) or
         Enum.reduce(shapes, 1, &(length(&1) * &2)) > @max_shapes do
      {:ok, %{}}
    else
      shapes
      |> Enum.reverse()
      |> Enum.reduce([[]], fn edges, acc -> for e <- edges, rest <- acc, do: [e | rest] end)
      |> Enum.map(&List.to_tuple/1)
      |> Enum.reject(&(&1 == spec.shape))
      |> Result.map_ok(fn shape ->
        with {:ok, p} <-
               Pipeline.new(meta.codecs, %{spec | shape: shape}, zarr_format: meta.zarr_format),
             do: {:ok, {shape, p}}
      end)
      |> case do
        {:ok, pairs} -> {:ok, Map.new(pairs)}
        error -> error
      end
    end
  end
end
