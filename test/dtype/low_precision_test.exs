defmodule ExZarr.DType.LowPrecisionTest do
  # bfloat16, the float8 / float4 family and int2 / int4 / uint2 / uint4: every bit pattern and
  # the rounding of numbers checked against ml_dtypes (the reference implementation tensorstore
  # and JAX use), fill values in every encoding, arrays of each type through the bytes codec.
  use ExUnit.Case, async: true

  alias ExZarr.DType
  alias ExZarr.DType.LowPrecision
  alias ExZarr.Native
  alias ExZarr.Test.Python

  doctest LowPrecision

  @floats LowPrecision.all() -- [:int2, :int4, :uint2, :uint4]

  # For each float type: the float64 bits of every bit pattern's value ("nan" for a NaN) and
  # what ml_dtypes converts sample numbers to: every value, every midpoint between neighbours
  # (the ties), numbers just beside them, and numbers far out of range.
  @script """
  import json, sys
  import numpy as np, ml_dtypes
  out = {}
  for name in sys.argv[1].split(","):
      t = getattr(ml_dtypes, name)
      width = 2 if name == "bfloat16" else 1
      count = 16 if name == "float4_e2m1fn" else 256 ** width
      raw = np.arange(count, dtype=np.uint16 if width == 2 else np.uint8).view(t).astype(np.float64)
      values = [str(v) if not np.isfinite(v) else int(np.float64(v).view(np.uint64)) for v in raw]
      finite = np.unique(raw[np.isfinite(raw)])
      # Every neighbour pair for the 8-bit types, 3000 random ones for bfloat16.
      pairs = np.arange(len(finite) - 1)
      if width == 2:
          pairs = np.random.default_rng(7).choice(pairs, 3000, replace=False)
      mids = (finite[pairs] + finite[pairs + 1]) / 2
      finite = finite[pairs]
      # ml_dtypes rounds a double through float32: beside a tie by a float32 step, so that one
      # rounding gives the same (tensorstore rounds the float8 types from the double directly).
      near = np.concatenate([mids * (1 + 2.0 ** -20), mids * (1 - 2.0 ** -20)])
      extra = np.array([1e300, -1e300, 1e-300, -1e-300, 3e38, -3e38, 1e-40, 0.3, -0.1, 7.0, 1000.0])
      samples = np.concatenate([finite, mids, near, extra])
      bits = samples.astype(t).view(np.uint16 if width == 2 else np.uint8)
      out[name] = {"values": values, "samples": samples.tolist(), "bits": bits.tolist()}
  print(json.dumps(out))
  """

  setup_all do
    out = Python.run!(@script, [Enum.join(@floats, ",")])
    %{ml: out |> String.split("\n", trim: true) |> List.last() |> :jiffy.decode([:return_maps])}
  end

  defp float64(bits) do
    <<f::float-64>> = <<bits::64>>
    f
  end

  test "every bit pattern has ml_dtypes' value", %{ml: ml} do
    for dtype <- @floats, {want, bits} <- Enum.with_index(ml[Atom.to_string(dtype)]["values"]) do
      got = LowPrecision.to_value(dtype, bits)

      case want do
        "nan" -> assert got == :nan or match?({:bits, ^bits}, got), inspect({dtype, bits})
        "inf" -> assert got == :infinity
        "-inf" -> assert got == :neg_infinity
        _ -> assert same_float?(got, float64(want)), inspect({dtype, bits, got})
      end
    end
  end

  # Bitwise, so that -0.0 and 0.0 differ.
  defp same_float?(got, want) when is_float(got), do: <<got::float-64>> == <<want::float-64>>
  defp same_float?(_got, _want), do: false

  test "numbers round as ml_dtypes rounds them, ties to even; out of range as the type does",
       %{ml: ml} do
    for dtype <- @floats do
      %{"samples" => samples, "bits" => bits} = ml[Atom.to_string(dtype)]

      # ml_dtypes rounds float8_e8m0fnu on float32 bit patterns, not values, where float32 is
      # subnormal: below 2^-126 the two disagree on ties.
      for {x, want} <- Enum.zip(samples, bits),
          dtype != :float8_e8m0fnu or abs(x) >= :math.pow(2, -126) do
        {:ok, fill} = DType.decode_fill(dtype, x, 3)
        got = :binary.decode_unsigned(DType.fill_element(dtype, fill), :little)

        if LowPrecision.to_value(dtype, want) in [:nan] or
             match?({:bits, _}, LowPrecision.to_value(dtype, want)) do
          assert fill == :nan, inspect({dtype, x, fill})
        else
          assert got == want, inspect({dtype, x, got, want})
        end

        # A user's fill value: the same, or an error where the type has no such value.
        case DType.cast_fill(dtype, x) do
          {:ok, cast} -> assert cast == fill, inspect({dtype, x})
          {:error, {:invalid_fill_value, ^dtype, ^x}} -> assert fill in [:nan, 6.0, -6.0]
        end
      end
    end
  end

  test "fill values in every encoding: numbers, NaN, infinities, hex bit patterns" do
    cases = [
      {:bfloat16, "NaN", :nan, "NaN", <<0xC0, 0x7F>>},
      {:bfloat16, "-Infinity", :neg_infinity, "-Infinity", <<0x80, 0xFF>>},
      {:bfloat16, "0x7fc1", {:bits, 0x7FC1}, "0x7fc1", <<0xC1, 0x7F>>},
      {:bfloat16, "0x3F80", 1.0, 1.0, <<0x80, 0x3F>>},
      {:bfloat16, 0.3, 0.30078125, 0.30078125, <<0x9A, 0x3E>>},
      {:bfloat16, 1.0e6, 999_424.0, 999_424.0, <<0x74, 0x49>>},
      {:float8_e4m3fn, "NaN", :nan, "NaN", <<0x7F>>},
      {:float8_e4m3fn, "0xff", {:bits, 0xFF}, "0xff", <<0xFF>>},
      {:float8_e4m3fn, "0x80", -0.0, -0.0, <<0x80>>},
      {:float8_e4m3fn, 448, 448.0, 448.0, <<0x7E>>},
      {:float8_e4m3fnuz, "NaN", :nan, "NaN", <<0x80>>},
      {:float8_e4m3fnuz, -0.0, 0.0, 0.0, <<0x00>>},
      {:float8_e4m3b11fnuz, "0x7f", 30.0, 30.0, <<0x7F>>},
      {:float8_e5m2, "Infinity", :infinity, "Infinity", <<0x7C>>},
      {:float8_e5m2, "0x7f", {:bits, 0x7F}, "0x7f", <<0x7F>>},
      {:float8_e5m2fnuz, 57_344, 57_344.0, 57_344.0, <<0x7F>>},
      {:float8_e3m4, "NaN", :nan, "NaN", <<0x78>>},
      {:float8_e8m0fnu, 0.25, 0.25, 0.25, <<125>>},
      {:float8_e8m0fnu, 0.0, :nan, "NaN", <<0xFF>>},
      {:float4_e2m1fn, -1.5, -1.5, -1.5, <<0x0B>>},
      {:float4_e2m1fn, "0x0f", -6.0, -6.0, <<0x0F>>}
    ]

    for {dtype, json, canonical, written, element} <- cases do
      assert DType.decode_fill(dtype, json, 3) == {:ok, canonical}, inspect({dtype, json})
      assert DType.encode_fill(dtype, canonical, 3) == written, inspect({dtype, json})
      assert DType.fill_element(dtype, canonical) == element, inspect({dtype, json})
      assert DType.decode_fill(dtype, written, 3) == {:ok, canonical}
    end

    assert DType.default_fill(:bfloat16) == 0.0
    assert DType.default_fill(:float8_e8m0fnu) == :nan
    assert DType.encode_fill(:bfloat16, {:bits, 0x7FC1}, 2) == "NaN"
    assert DType.decode_fill(:bfloat16, :null, 2) == {:ok, nil}
  end

  test "fill values a type cannot hold are errors" do
    bad = [
      {:float8_e4m3fn, "Infinity"},
      {:float8_e4m3fnuz, "-Infinity"},
      {:float4_e2m1fn, "NaN"},
      {:float8_e8m0fnu, "Infinity"},
      {:bfloat16, "0x7f"},
      {:bfloat16, "0x7fc0f"},
      {:float8_e5m2, "0x7g"},
      {:float4_e2m1fn, "0x10"},
      {:float8_e5m2, [1, 2]},
      {:bfloat16, "1.0"},
      {:int4, 8},
      {:int4, -9},
      {:int2, 2},
      {:uint2, 4},
      {:uint4, -1},
      {:uint4, "0x1"}
    ]

    for {dtype, json} <- bad do
      assert {:error, {:invalid_fill_value, ^dtype, ^json}} = DType.decode_fill(dtype, json, 3)
      assert {:error, _} = DType.cast_fill(dtype, json)
    end

    # Given by a user, a number out of range is an error unless the type has infinities.
    assert {:error, _} = DType.cast_fill(:float8_e4m3fn, 1000)
    assert {:error, _} = DType.cast_fill(:float8_e8m0fnu, -2.0)
    assert {:error, _} = DType.cast_fill(:float4_e2m1fn, 7)
    assert DType.cast_fill(:float8_e5m2, 1.0e6) == {:ok, :infinity}
    assert DType.cast_fill(:bfloat16, {:bits, 0x7FC1}) == {:ok, {:bits, 0x7FC1}}
    assert {:error, _} = DType.cast_fill(:bfloat16, {:bits, 0x3F80})
  end

  test "names, sizes, ranges, v2 and v3 forms" do
    for dtype <- LowPrecision.all() do
      name = Atom.to_string(dtype)
      assert DType.from_v3(name) == {:ok, dtype}
      assert DType.from_v3(%{"name" => name}) == {:ok, dtype}
      assert DType.to_v3(dtype) == name
      assert DType.to_v2(dtype, :little) == name
      assert {:ok, ^dtype, _} = DType.from_v2(name)
      assert DType.valid?(dtype)
      assert DType.itemsize(dtype) == if(dtype == :bfloat16, do: 2, else: 1)
    end

    assert DType.from_v2("bfloat16") == {:ok, :bfloat16, :little}
    assert DType.from_v2("<bfloat16") == {:error, {:unsupported_dtype, "<bfloat16"}}
    assert DType.component_size(:bfloat16) == 2
    assert DType.int_range(:int4) == {-8, 7}
    assert DType.int_range(:uint2) == {0, 3}
    assert DType.fill_element(:int4, -8) == <<0xF8>>
    assert DType.fill_element(:uint4, 15) == <<0x0F>>
  end

  test "the bytes codec stores sub-byte elements masked and reads them sign-extended" do
    assert Native.subbyte_encode(<<0, 1, 7, 0xFF, 0xF8>>, 4, true) == {:ok, <<0, 1, 7, 0xF, 8>>}

    assert Native.subbyte_decode(<<0, 1, 7, 0xF, 8, 0x38, 0xA1>>, 4, true) ==
             {:ok, <<0, 1, 7, 0xFF, 0xF8, 0xF8, 1>>}

    assert Native.subbyte_decode(<<0xFE, 0x03>>, 2, false) == {:ok, <<2, 3>>}
    assert {:error, {:out_of_range, msg}} = Native.subbyte_encode(<<0, 8>>, 4, true)
    assert msg =~ "element 1"
    assert {:error, {:out_of_range, _}} = Native.subbyte_encode(<<4>>, 2, false)
    assert {:error, {:out_of_range, _}} = Native.subbyte_encode(<<0x1F>>, 4, false)
    # Already in the other form: the same binary back.
    bin = <<1, 2, 3>>
    assert {:ok, same} = Native.subbyte_encode(bin, 4, false)
    assert :erts_debug.same(same, bin)
    assert_raise ArgumentError, fn -> Native.subbyte_encode(bin, 8, false) end
  end

  test "arrays of every type: written, read back, fill where nothing was written" do
    for dtype <- LowPrecision.all(), format <- [2, 3] do
      data = sample(dtype, 10)
      fill = if dtype in [:int2, :int4, :uint2, :uint4], do: 1, else: :nan
      fill = if dtype == :float4_e2m1fn, do: 0.5, else: fill

      {:ok, a} =
        ExZarr.create(
          shape: {12},
          chunks: {5},
          dtype: dtype,
          fill_value: fill,
          zarr_format: format,
          storage: :memory
        )

      :ok = ExZarr.Array.set_slice(a, data, start: {0}, stop: {10})
      size = DType.itemsize(dtype)
      fill_el = DType.fill_element(dtype, a.metadata.fill_value)
      assert ExZarr.Array.get_slice(a) == {:ok, data <> fill_el <> fill_el}, inspect(dtype)
      {:ok, reopened} = ExZarr.open(storage: a.storage)
      assert reopened.metadata.dtype == dtype
      assert reopened.metadata.fill_value == a.metadata.fill_value

      assert ExZarr.Array.get_slice(reopened, start: {3}, stop: {7}) ==
               {:ok, binary_part(data, 3 * size, 4 * size)}
    end
  end

  test "writing a sub-byte value out of range is an error and stores nothing" do
    for {dtype, bad} <- [
          int4: <<8>>,
          int2: <<0xFD>>,
          uint2: <<4>>,
          uint4: <<0x10>>,
          float4_e2m1fn: <<0x10>>
        ] do
      {:ok, a} = ExZarr.create(shape: {4}, chunks: {4}, dtype: dtype, storage: :memory)
      assert {:error, _} = ExZarr.Array.set_slice(a, <<0, 0, 0>> <> bad)
      assert ExZarr.Array.get_slice(a) == {:ok, <<0, 0, 0, 0>>}
    end
  end

  test "big-endian bfloat16 has no Zarr v2 form; its v3 bytes are swapped" do
    assert {:error, _} =
             ExZarr.create(
               shape: {2},
               dtype: :bfloat16,
               zarr_format: 2,
               endian: :big,
               storage: :memory
             )

    {:ok, a} =
      ExZarr.create(shape: {2}, dtype: :bfloat16, endian: :big, compressor: nil, storage: :memory)

    :ok = ExZarr.Array.set_slice(a, <<0x80, 0x3F, 0xC0, 0x7F>>)
    {:ok, stored} = ExZarr.Storage.get(a.storage, "c/0")
    assert stored == <<0x3F, 0x80, 0x7F, 0xC0>>
    assert ExZarr.Array.get_slice(a) == {:ok, <<0x80, 0x3F, 0xC0, 0x7F>>}
  end

  defp sample(:bfloat16, n), do: for(i <- 1..n, into: <<>>, do: <<0x3F00 + i * 37::little-16>>)

  defp sample(dtype, n) when dtype in [:int2, :int4] do
    {lo, hi} = DType.int_range(dtype)
    for i <- 1..n, into: <<>>, do: <<lo + rem(i * 5, hi - lo + 1)::signed-8>>
  end

  defp sample(dtype, n) when dtype in [:uint2, :uint4, :float4_e2m1fn] do
    {_, hi} = if dtype == :float4_e2m1fn, do: {0, 15}, else: DType.int_range(dtype)
    for i <- 1..n, into: <<>>, do: <<rem(i * 5, hi + 1)>>
  end

  defp sample(_float8, n), do: for(i <- 1..n, into: <<>>, do: <<rem(i * 53, 256)>>)
end
