defmodule ExZarr.Codecs.ScaleOffsetTest do
  use ExUnit.Case, async: true

  import Bitwise

  import ExZarr.Test.Codecs, only: [spec: 2, round_trip: 3]
  alias ExZarr.Codecs.ScaleOffset
  alias ExZarr.Test.Python

  doctest ScaleOffset

  defp init(config, dtype, n), do: ScaleOffset.init(config, spec({n}, dtype))

  test "integers exactly: out of range on either way, or not a multiple of scale, is an error" do
    {:ok, s} = init(%{"offset" => -5, "scale" => 3}, :int8, 2)
    assert round_trip(ScaleOffset, s, <<37, -47>>) == {<<126, -126>>, {:ok, <<37, -47>>}}

    assert ScaleOffset.encode(<<38, 0>>, s) ==
             {:error, {:scale_offset, "element 0 encodes out of range"}}

    assert {:error, {:scale_offset, _}} = ScaleOffset.decode(<<0, 4>>, s)

    # uint64 beyond int64, and products beyond 128 bits
    max = 0xFFFFFFFFFFFFFFFF
    {:ok, s} = ScaleOffset.init(%{"offset" => max - 1}, %{spec({1}, :uint64) | fill_value: max})

    assert ScaleOffset.encode(<<0::64>>, s) ==
             {:error, {:scale_offset, "element 0 encodes out of range"}}

    assert round_trip(ScaleOffset, s, <<max::64-little>>) ==
             {<<1::64-little>>, {:ok, <<max::64-little>>}}

    assert {:error, {:invalid_value, "scale", -1, _}} = init(%{"scale" => -1}, :uint64, 1)

    {:ok, s} = init(%{"offset" => 0, "scale" => max}, :uint64, 1)
    assert {:error, _} = ScaleOffset.encode(<<max::64-little>>, s)
  end

  test "floats in the type's own precision; NaN and infinities as IEEE 754 gives them" do
    {:ok, s} = init(%{"offset" => 0.1, "scale" => 3}, :float32, 2)
    {:ok, enc} = ScaleOffset.encode(<<1.0::float-32-little, 0x7FC00000::32-little>>, s)
    # float32 arithmetic: (1.0 - 0.1f) rounded to float32, times 3 rounded to float32
    minus = <<1.0 - 0.100000001490116119384765625::float-32>> |> then(fn <<x::float-32>> -> x end)
    <<want::float-32>> = <<minus * 3::float-32>>
    assert <<^want::float-32-little, 0x7FC00000::32-little>> = enc

    {:ok, s} = init(%{"offset" => "Infinity", "scale" => "0x3ff0000000000000"}, :float64, 1)

    assert ScaleOffset.encode(<<1.0::float-64-little>>, s) ==
             {:ok, <<0xFFF0000000000000::64-little>>}
  end

  test "the fill value the next codec sees is encoded; defaults 0 and 1; configuration kept" do
    {:ok, s} = ScaleOffset.init(%{"scale" => 2}, %{spec({2}, :int32) | fill_value: 7})
    assert ScaleOffset.resolve_spec(%{spec({2}, :int32) | fill_value: 7}, s).fill_value == 14
    assert ScaleOffset.configuration(s) == %{"offset" => 0, "scale" => 2}

    assert {:error, {:fill_value_out_of_range, 100}} =
             ScaleOffset.init(%{"scale" => 2}, %{spec({2}, :int8) | fill_value: 100})
  end

  test "bad configurations and data types" do
    for {config, key} <- [
          {%{"scale" => 0}, "scale"},
          {%{"scale" => 0.0}, "scale"},
          {%{"offset" => 0.5}, "offset"},
          {%{"offset" => 1 <<< 70}, "offset"},
          {%{"scale" => "2"}, "scale"}
        ] do
      assert {:error, {:invalid_value, ^key, _, _}} = init(config, :int16, 2)
    end

    for dtype <- [:bool, :complex64, :bfloat16, {:fixed_utf32, 2}] do
      assert {:error, {:unsupported_dtype, ^dtype}} = init(%{}, dtype, 2)
    end

    {:ok, s} = init(%{}, :int16, 2)
    assert {:error, {:scale_offset, {:size, 3, 4}}} = ScaleOffset.decode(<<0, 0, 0>>, s)
  end

  @script """
  import json, os, sys, warnings
  import numpy as np, zarr
  from zarr.codecs import ScaleOffset
  warnings.simplefilter("ignore")
  d, cases = sys.argv[1], json.loads(sys.argv[2])
  out = {}
  for name, dtype, offset, scale in cases:
      # 1. read what ExZarr wrote
      out[name] = np.asarray(zarr.open_array(os.path.join(d, "ex_" + name))[:]).tobytes().hex()
      # 2. write the same values with zarr-python
      z = zarr.create_array(os.path.join(d, "py_" + name), shape=(7,), chunks=(3,), dtype=dtype,
                            filters=[ScaleOffset(offset=offset, scale=scale)], compressors=None, fill_value=0)
      z[:] = np.frombuffer(bytes.fromhex(out[name]), dtype=dtype)
  print(json.dumps(out))
  """

  @cases [
    {"i16", :int16, 100, -3},
    {"u32", :uint32, 0, 2},
    {"i64", :int64, -(1 <<< 40), 7},
    {"f32", :float32, 0.25, 10},
    {"f64", :float64, "NaN", 1.5},
    {"f16", :float16, -2, "0x3800"}
  ]

  defp values(dtype) do
    case dtype do
      :int16 ->
        for v <- [100, 103, 70, 130, -9000, 10_000, 100], into: <<>>, do: <<v::16-little>>

      :uint32 ->
        for v <- [1, 2, 3, 2_000_000_000, 5, 6, 7], into: <<>>, do: <<v::32-little>>

      :int64 ->
        for v <- [0, 7, -7, 1 <<< 50, -(1 <<< 40), 14, 21], into: <<>>, do: <<v::64-little>>

      _ ->
        for v <- [0.0, 1.5, -2.25, 1.0e-3, 7.0, 100.0, -0.5],
            into: <<>>,
            do: <<v::float-size(bits(dtype))-little>>
    end
  end

  defp bits(:float16), do: 16
  defp bits(:float32), do: 32
  defp bits(:float64), do: 64

  @tag :tmp_dir
  @tag :newest_zarr
  test "zarr-python 3.4 reads what ExZarr wrote and ExZarr reads what it wrote", %{tmp_dir: dir} do
    if Python.executable(:newest) == nil, do: flunk("no venv of the newest zarr-python")

    written =
      for {name, dtype, offset, scale} <- @cases, into: %{} do
        codecs = [
          %{name: "scale_offset", configuration: %{"offset" => offset, "scale" => scale}},
          %{name: "bytes", configuration: %{"endian" => "little"}}
        ]

        {:ok, a} =
          ExZarr.create(
            path: Path.join(dir, "ex_" <> name),
            shape: {7},
            chunks: {3},
            dtype: dtype,
            codecs: codecs,
            fill_value: 0
          )

        :ok = ExZarr.Array.set_slice(a, values(dtype))
        {:ok, back} = ExZarr.Array.get_slice(a)
        {name, back}
      end

    args =
      Enum.map(@cases, fn {name, dtype, offset, scale} ->
        [name, Atom.to_string(dtype), offset, scale]
      end)

    out = Python.run!(@script, [dir, :jiffy.encode(args)], :newest)
    read = :jiffy.decode(out |> String.split("\n", trim: true) |> List.last(), [:return_maps])

    for {name, dtype, _, _} <- @cases do
      assert Base.decode16!(read[name], case: :lower) == written[name], "zarr-python read #{name}"
      {:ok, py} = ExZarr.open(path: Path.join(dir, "py_" <> name))
      assert ExZarr.Array.get_slice(py) == {:ok, written[name]}, "ExZarr read #{name}"
      # the stored chunks agree byte for byte
      assert File.read!(Path.join([dir, "py_" <> name, "c", "0"])) ==
               File.read!(Path.join([dir, "ex_" <> name, "c", "0"])),
             "#{name} #{dtype}"
    end
  end
end
