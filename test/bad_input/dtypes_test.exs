defmodule ExZarr.BadInput.DTypesTest do
  @moduledoc """
  Hostile fill values and data of the low-precision types (bfloat16, the float8 family,
  float4_e2m1fn, int2/int4/uint2/uint4) in both formats: a fill value that is not the type's
  JSON form is refused when the metadata is read and when an array is created.
  """
  use ExUnit.Case, async: true

  alias ExZarr.DType
  alias ExZarr.DType.LowPrecision

  # Strings that look like hex bit patterns but are not exactly the stored bytes in hex digits.
  defp bad_hex(dtype) do
    width = if dtype == :bfloat16, do: 4, else: 2
    digits = String.duplicate("0", width - 1)

    [
      "0x+" <> digits,
      "0x-" <> digits,
      "0x " <> digits,
      "0x" <> digits <> "g",
      "0X" <> digits <> "0"
    ] ++
      ["0x" <> digits, "0x" <> digits <> "00", "0x"]
  end

  for dtype <- LowPrecision.all(),
      LowPrecision.packed_bits(dtype) == nil or dtype == :float4_e2m1fn do
    test "#{dtype}: a fill value in hex with a sign, space or wrong width is refused" do
      for fill <- bad_hex(unquote(dtype)), format <- [2, 3] do
        assert {:error, {:invalid_fill_value, _, ^fill}} =
                 DType.decode_fill(unquote(dtype), fill, format),
               "#{inspect(fill)} v#{format}"

        assert {:error, _} =
                 ExZarr.create(
                   shape: {3},
                   chunks: {2},
                   dtype: unquote(dtype),
                   storage: :memory,
                   zarr_format: format,
                   fill_value: fill
                 )
      end
    end

    test "#{dtype}: opening v3 metadata whose fill value is hex with a sign fails" do
      {:ok, store} = ExZarr.Storage.new(:memory, [])
      [fill | _] = bad_hex(unquote(dtype))

      doc = %{
        "zarr_format" => 3,
        "node_type" => "array",
        "shape" => [3],
        "data_type" => Atom.to_string(unquote(dtype)),
        "chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [2]}},
        "chunk_key_encoding" => %{"name" => "default"},
        "fill_value" => fill,
        "codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}]
      }

      :ok = ExZarr.Storage.put(store, "zarr.json", ExZarr.JSON.encode(doc))
      assert {:error, _} = ExZarr.open(storage: store)
    end
  end
end
