defmodule ExZarr.Codecs.CastValueTest do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [spec: 2]
  alias ExZarr.Codecs.CastValue
  alias ExZarr.DType
  alias ExZarr.Test.Python

  doctest CastValue

  @types ~w(int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64)a
  @rounding ~w(nearest-even towards-zero towards-positive towards-negative nearest-away)

  @floats [
    0.0,
    -0.0,
    0.5,
    1.5,
    2.5,
    -2.5,
    2.7,
    -2.7,
    127.5,
    -128.5,
    255.5,
    256.0,
    -0.6,
    65504.0,
    65505.0,
    65519.0,
    65520.0,
    65521.0,
    65535.99,
    65536.0,
    3.4028235677973366e38,
    3.402823669209385e38,
    70000.0,
    16_777_217.0,
    1.0e30,
    -1.0e30,
    3.5e38,
    1.0e300,
    1.0e-8,
    -6.0e-8,
    5.0e-324,
    2.0e-45,
    :nan,
    :infinity,
    :neg_infinity
  ]
  @ints [
    0,
    1,
    -1,
    127,
    128,
    255,
    256,
    -129,
    65519,
    65520,
    16_777_217,
    16_777_219,
    9_007_199_254_740_993,
    9_223_372_036_854_775_807,
    -9_223_372_036_854_775_808,
    18_446_744_073_709_551_615
  ]

  # The values of the list a type can hold, as elements of it.
  defp elements(dtype) do
    values = if DType.float?(dtype), do: @floats, else: @ints
    {min, max} = if DType.float?(dtype), do: {nil, nil}, else: DType.int_range(dtype)

    for v <- values, min == nil or v in min..max, into: [] do
      DType.fill_element(dtype, v)
    end
    |> Enum.uniq()
  end

  defp combos do
    for from <- @types,
        to <- @types,
        rounding <- @rounding,
        range <- [nil, "clamp", "wrap"],
        range != "wrap" or not DType.float?(to) do
      {from, to, rounding, range}
    end
  end

  defp config(to, rounding, range) do
    config = %{"data_type" => Atom.to_string(to), "rounding" => rounding}
    if range, do: Map.put(config, "out_of_range", range), else: config
  end

  test "scalar maps replace values before any cast, each way; the fill value is cast too" do
    config = %{
      "data_type" => "int8",
      "out_of_range" => "clamp",
      "scalar_map" => %{
        "encode" => [["NaN", -128], ["Infinity", 127]],
        "decode" => [[-128, "NaN"]]
      }
    }

    spec = %{spec({4}, :float32) | fill_value: :nan}
    {:ok, s} = CastValue.init(config, spec)
    assert CastValue.resolve_spec(spec, s) == %{spec | dtype: :int8, fill_value: -128}
    data = [:nan, :infinity, 3.5, -1000.0] |> Enum.map(&DType.fill_element(:float32, &1))
    assert {:ok, <<-128::signed, 127, 4, -128::signed>> = enc} = CastValue.encode(data, s)
    back = [:nan, 127.0, 4.0, :nan] |> Enum.map(&DType.fill_element(:float32, &1))
    assert CastValue.decode(enc, s) == {:ok, IO.iodata_to_binary(back)}
  end

  test "of equal keys the last counts; a map of many entries is searched, not scanned" do
    config = %{
      "data_type" => "int32",
      "scalar_map" => %{"encode" => [[1, 5], [1.0, 6], [-0.0, 7], [0.0, 8]]}
    }

    {:ok, s} = CastValue.init(config, spec({3}, :float64))
    data = [1.0, 0.0, -0.0] |> Enum.map(&DType.fill_element(:float64, &1))
    assert CastValue.encode(data, s) == {:ok, <<6::32-little, 8::32-little, 8::32-little>>}

    pairs = for i <- 1..20_000, do: [i, -i]
    config = %{"data_type" => "int32", "scalar_map" => %{"encode" => pairs}}
    {:ok, s} = CastValue.init(config, spec({200_000}, :int32))
    data = for i <- 1..200_000, into: <<>>, do: <<i::32-little>>
    {:ok, enc} = CastValue.encode(data, s)
    assert binary_part(enc, 0, 8) == <<-1::32-little-signed, -2::32-little-signed>>
    assert binary_part(enc, 4 * 199_999, 4) == <<200_000::32-little>>
  end

  test "what cannot be cast is an error naming the element" do
    {:ok, s} = CastValue.init(%{"data_type" => "uint8"}, spec({3}, :float64))
    data = [1.0, :nan, 2.0] |> Enum.map(&DType.fill_element(:float64, &1))

    assert CastValue.encode(data, s) ==
             {:error, {:cast_value, "element 1 is NaN, which an integer type cannot hold"}}

    assert {:error, {:cast_value, {:size, 3, 24}}} = CastValue.encode(<<1, 2, 3>>, s)

    assert {:error, {:fill_value_out_of_range, -1.0}} =
             CastValue.init(%{"data_type" => "uint8"}, %{spec({3}, :float64) | fill_value: -1.0})
  end

  test "bad configurations and data types" do
    for {config, key} <- [
          {%{}, "data_type"},
          {%{"data_type" => "bool"}, "data_type"},
          {%{"data_type" => "bfloat16"}, "data_type"},
          {%{"data_type" => %{"name" => "int8", "configuration" => %{"x" => 1}}}, "data_type"},
          {%{"data_type" => "int8", "rounding" => "up"}, "rounding"},
          {%{"data_type" => "int8", "out_of_range" => "saturate"}, "out_of_range"},
          {%{"data_type" => "float32", "out_of_range" => "wrap"}, "out_of_range"},
          {%{"data_type" => "int8", "scalar_map" => [["NaN", 0]]}, "scalar_map"},
          {%{"data_type" => "int8", "scalar_map" => %{"both" => []}}, "scalar_map"},
          {%{"data_type" => "int8", "scalar_map" => %{"encode" => [["NaN", 300]]}}, "scalar_map"},
          {%{"data_type" => "int8", "scalar_map" => %{"decode" => [["NaN", 0]]}}, "scalar_map"},
          {%{"data_type" => "int8", "scalar_map" => %{"encode" => [[1.0]]}}, "scalar_map"}
        ] do
      result = CastValue.init(config, spec({2}, :float64))

      assert match?({:error, {:invalid_value, ^key, _, _}}, result) or
               result == {:error, {:missing_key, key}},
             "#{inspect(config)}: #{inspect(result)}"
    end

    for dtype <- [:bool, :complex64, :bfloat16, :int4, {:fixed_utf32, 1}] do
      assert {:error, {:unsupported_dtype, ^dtype}} =
               CastValue.init(%{"data_type" => "int8"}, spec({2}, dtype))
    end
  end

  @array_script """
  import json, os, sys, warnings
  import numpy as np, zarr
  from zarr.codecs import CastValue, ScaleOffset
  warnings.simplefilter("ignore")
  d = sys.argv[1]
  out = {}
  for name in ["cast", "scaled"]:
      out[name] = np.asarray(zarr.open_array(os.path.join(d, "ex_" + name))[:]).tobytes().hex()
  data = np.array([0.0, 1.26, -3.3, 250.0, np.nan, 7.75, 1e9], dtype="<f8")
  a = zarr.create_array(os.path.join(d, "py_cast"), shape=(7,), chunks=(3,), dtype="<f8", fill_value=0.0,
                        filters=[CastValue(data_type="int16", rounding="towards-zero", out_of_range="clamp",
                                           scalar_map={"encode": [("NaN", -1)], "decode": [(-1, "NaN")]})],
                        compressors=None)
  a[:] = data
  b = zarr.create_array(os.path.join(d, "py_scaled"), shape=(7,), chunks=(3,), dtype="<f4", fill_value=0.0,
                        filters=[ScaleOffset(offset=10, scale=4), CastValue(data_type="uint8", out_of_range="wrap")],
                        compressors=None)
  b[:] = np.array([10.0, 10.5, 11.3, 73.7, 9.0, 40.0, 12.0], dtype="<f4")
  print(json.dumps(out))
  """

  @tag :tmp_dir
  @tag :newest_zarr
  test "arrays both ways with zarr-python 3.4, alone and after scale_offset", %{tmp_dir: dir} do
    if Python.executable(:newest) == nil, do: flunk("no venv of the newest zarr-python")

    cast = %{
      name: "cast_value",
      configuration: %{
        "data_type" => "int16",
        "rounding" => "towards-zero",
        "out_of_range" => "clamp",
        "scalar_map" => %{"encode" => [["NaN", -1]], "decode" => [[-1, "NaN"]]}
      }
    }

    scaled = [
      %{name: "scale_offset", configuration: %{"offset" => 10, "scale" => 4}},
      %{name: "cast_value", configuration: %{"data_type" => "uint8", "out_of_range" => "wrap"}}
    ]

    f64 =
      [0.0, 1.26, -3.3, 250.0, :nan, 7.75, 1.0e9] |> Enum.map(&DType.fill_element(:float64, &1))

    f32 = [10.0, 10.5, 11.3, 73.7, 9.0, 40.0, 12.0] |> Enum.map(&DType.fill_element(:float32, &1))

    written =
      for {name, dtype, codecs, data} <- [
            {"cast", :float64, [cast], f64},
            {"scaled", :float32, scaled, f32}
          ],
          into: %{} do
        bytes = %{name: "bytes", configuration: %{"endian" => "little"}}
        path = Path.join(dir, "ex_" <> name)

        {:ok, a} =
          ExZarr.create(
            path: path,
            shape: {7},
            chunks: {3},
            dtype: dtype,
            codecs: codecs ++ [bytes],
            fill_value: 0.0
          )

        :ok = ExZarr.Array.set_slice(a, IO.iodata_to_binary(data))
        {:ok, back} = ExZarr.Array.get_slice(a)
        {name, back}
      end

    out = Python.run!(@array_script, [dir], :newest)
    read = :jiffy.decode(out |> String.split("\n", trim: true) |> List.last(), [:return_maps])

    for name <- ["cast", "scaled"] do
      assert Base.decode16!(read[name], case: :lower) == written[name], "zarr-python read #{name}"
      {:ok, py} = ExZarr.open(path: Path.join(dir, "py_" <> name))
      assert ExZarr.Array.get_slice(py) == {:ok, written[name]}, "ExZarr read #{name}"

      for chunk <- ["0", "1", "2"] do
        assert File.read!(Path.join([dir, "py_" <> name, "c", chunk])) ==
                 File.read!(Path.join([dir, "ex_" <> name, "c", chunk])),
               "#{name} chunk #{chunk}"
      end
    end
  end

  @script """
  import json, sys, numpy as np
  from cast_value_rs import cast_array
  out = []
  for src, tgt, rounding, oor, values in json.load(sys.stdin):
      row = []
      for v in values:
          a = np.frombuffer(bytes.fromhex(v), dtype=src)
          try:
              r = cast_array(a, target_dtype=np.dtype(tgt), rounding_mode=rounding, out_of_range_mode=oor, scalar_map_entries=None)
              row.append("nan" if r.dtype.kind == "f" and np.isnan(r[0]) else r.astype(r.dtype.newbyteorder("<")).tobytes().hex())
          except (ValueError, TypeError, OverflowError):
              row.append(None)
      out.append(row)
  print(json.dumps(out))
  """

  @tag :newest_zarr
  test "every pair of types, rounding and range mode casts each value as cast-value-rs does" do
    if Python.executable(:newest) == nil, do: flunk("no venv of the newest zarr-python")
    combos = combos()

    cases =
      for {from, to, rounding, range} <- combos,
          do: [
            from,
            to,
            rounding,
            range || :null,
            Enum.map(elements(from), &Base.encode16(&1, case: :lower))
          ]

    input =
      Path.join(System.tmp_dir!(), "cast_value_cases_#{System.unique_integer([:positive])}.json")

    File.write!(input, :jiffy.encode(cases))
    python = Python.executable(:newest)
    {out, 0} = System.cmd("sh", ["-c", ~s("$0" -c "$1" < "$2"), python, @script, input])
    File.rm!(input)
    expected = :jiffy.decode(out |> String.split("\n", trim: true) |> List.last(), [:return_maps])

    mismatches =
      for {{from, to, rounding, range}, want_row} <- Enum.zip(combos, expected),
          {element, want} <- Enum.zip(elements(from), want_row),
          got = ours(element, from, to, rounding, range),
          got != want do
        {from, to, rounding, range, element, want, got}
      end

    assert mismatches == [],
           "#{length(mismatches)} differ: #{inspect(mismatches, limit: :infinity)}"
  end

  defp ours(element, from, to, rounding, range) do
    {:ok, s} = CastValue.init(config(to, rounding, range), spec({1}, from))

    case CastValue.encode(element, s) do
      {:ok, bin} -> if nan?(bin, to), do: "nan", else: Base.encode16(bin, case: :lower)
      {:error, {:cast_value, _}} -> :null
    end
  end

  defp nan?(bin, to), do: DType.float?(to) and DType.element_value(to, bin) == :nan
end
