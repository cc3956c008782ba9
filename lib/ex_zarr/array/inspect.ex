defimpl Inspect, for: ExZarr.Array do
  # One line that says what the array is, rather than the struct with its pipeline:
  # #ExZarr.Array<float32 {1000, 800} chunks {100, 100} zstd v3 file:///data/a.zarr>
  def inspect(%ExZarr.Array{metadata: meta} = array, _opts) do
    {chunks, shards} = ExZarr.Metadata.chunk_shapes(meta)
    shards = if shards, do: " shards #{Kernel.inspect(shards, charlists: :as_lists)}", else: ""

    "#ExZarr.Array<#{ExZarr.DType.name(meta.dtype)} #{Kernel.inspect(meta.shape)} " <>
      "chunks #{Kernel.inspect(chunks, charlists: :as_lists, limit: 12)}#{shards} #{Enum.join(ExZarr.Metadata.codec_names(meta), "+")} " <>
      "v#{meta.zarr_format} #{ExZarr.Info.location(array.storage, array.prefix)}>"
  end
end
