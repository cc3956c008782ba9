defmodule ExZarr.Codecs.NumcodecsTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codecs.Numcodecs

  test "decode bounds: the known size, the var-len limit, else a fixed ceiling, never exact" do
    assert Numcodecs.decode_bounds(%{decoded_size: 0}) == {0, true}

    assert Numcodecs.decode_bounds(%{dtype: :string, shape: {10}, decoded_size: nil}) ==
             {ExZarr.Limits.vlen_decoded_bytes(10), false}

    assert {max, false} = Numcodecs.decode_bounds(%{dtype: :int8, shape: {10}, decoded_size: nil})
    assert max > 10
  end

  test "the compression level is checked against its range" do
    assert {:error, _} = Numcodecs.level_state(%{"level" => 10}, %{decoded_size: 1}, 1, 1..9)
    assert {:error, _} = Numcodecs.level_state(%{"level" => "1"}, %{decoded_size: 1}, 1, 1..9)

    assert Numcodecs.level_state(%{"level" => 9}, %{decoded_size: 1}, 1, 1..9) ==
             {:ok, %{level: 9, max: 1, exact: true}}
  end

  test "numpy dtype strings of the real number types, both ways" do
    for dtype <-
          ~w(bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64)a do
      assert Numcodecs.parse_dtype(Numcodecs.numpy_dtype(dtype)) == {:ok, dtype}
    end

    assert Numcodecs.numpy_dtype(:int32) == "<i4"
    assert Numcodecs.numpy_dtype(:uint8) == "|u1"
    assert Numcodecs.parse_dtype(">f8") == {:ok, :float64}

    for bad <- ["c16", "<", "", "i3", 4, nil] do
      assert Numcodecs.parse_dtype(bad) == {:error, {:unsupported_dtype, bad}}
    end

    assert Numcodecs.parse_dtype("<c16") == {:error, {:unsupported_dtype, "c16"}}
  end

  test "a dtype option: given in the configuration, else the chunk's real number type" do
    assert Numcodecs.dtype_option(%{"dtype" => "<i2"}, "dtype", %{dtype: :float64}) ==
             {:ok, :int16}

    assert Numcodecs.dtype_option(%{}, "dtype", %{dtype: :float32}) == {:ok, :float32}
    assert Numcodecs.dtype_option(%{}, "dtype", %{}) == {:error, {:missing_key, "dtype"}}

    assert Numcodecs.dtype_option(%{}, "dtype", %{dtype: :string}) ==
             {:error, {:unsupported_dtype, :string}}

    assert {:error, _} = Numcodecs.dtype_option(%{"dtype" => "<c8"}, "dtype", %{})
  end
end
