defmodule ExZarr.Metadata do
  @moduledoc """
  The one canonical description of a Zarr array, whatever format it is stored in.

  Zarr v2 (`.zarray` + `.zattrs`) and v3 (`zarr.json`) are translated at the JSON edge by
  `ExZarr.Metadata.V2` and `ExZarr.Metadata.V3`; everything else in ExZarr works on this struct.
  A v2 array becomes a codec pipeline like a v3 one: `order: "F"` is a `transpose` codec with
  the reversed axis order, the dtype's byte order is the `bytes` codec's `endian`, filters are
  the codecs before `bytes` (array->array) or after it (bytes->bytes), and the compressor is
  the last codec.

  Fields:

    * `zarr_format`: 2 or 3
    * `shape`, `chunks`: tuples (`chunks` is the chunk grid's chunk shape: for a sharded array
      the shard shape)
    * `dtype`: see `ExZarr.DType`
    * `fill_value`: the decoded fill value (see `ExZarr.DType.decode_fill/3`); `nil` only for
      a v2 `null` fill value
    * `codecs`: the pipeline as `t:ExZarr.Codec.spec/0` maps, in v3 order
    * `chunk_key_encoding`: `%{name: "default" | "v2", separator: "/" | "."}`
    * `attributes`: user attributes (`.zattrs` / `attributes`)
    * `dimension_names`: list of names (or nils), or nil
    * `storage_transformers`: as stored (v3)
  """

  @enforce_keys [:zarr_format, :shape, :chunks, :dtype, :codecs, :chunk_key_encoding]
  defstruct [
    :zarr_format,
    :shape,
    :chunks,
    :dtype,
    :fill_value,
    :codecs,
    :chunk_key_encoding,
    attributes: %{},
    dimension_names: nil,
    storage_transformers: []
  ]

  @type t :: %__MODULE__{
          zarr_format: 2 | 3,
          shape: tuple(),
          chunks: tuple(),
          dtype: ExZarr.DType.t(),
          fill_value: term(),
          codecs: [ExZarr.Codec.spec()],
          chunk_key_encoding: %{name: String.t(), separator: String.t()},
          attributes: map(),
          dimension_names: [String.t() | nil] | nil,
          storage_transformers: list()
        }
end
