defmodule ExZarr.DType.LowPrecisionInteropTest do
  @moduledoc """
  The low-precision types both ways with tensorstore (`low_precision_cases.py`): tensorstore
  writes part of each array (Zarr v3, some compressed, and v2 as its `zarr` driver writes
  them), ExZarr reads each whole and in a region, exactly, with the fill value where nothing
  was written. ExZarr then writes the same arrays with the same metadata: its uncompressed chunk
  files equal tensorstore's byte for byte (bit for bit in the bits a sub-byte element uses), its
  fill value and data type are tensorstore's, and tensorstore reads every array back exactly.
  """
  use ExUnit.Case, async: true

  import Bitwise

  alias ExZarr.Test.{NumcodecsPeer, Python}

  @moduletag :interop
  @script Path.expand("low_precision_cases.py", __DIR__)

  @tag :tmp_dir
  test "tensorstore and ExZarr read each other's low-precision arrays", %{tmp_dir: dir} do
    cases = run(["write", dir])
    assert length(cases) == 17

    for %{"name" => name, "compressed" => compressed} <- cases do
      ts = Path.join([dir, "ts", name])
      want = File.read!(ts <> ".bin")
      {:ok, a} = ExZarr.open(path: ts)
      assert ExZarr.Array.get_slice(a) == {:ok, want}, name

      size = ExZarr.DType.itemsize(a.metadata.dtype)
      row = 5 * size

      assert ExZarr.Array.get_slice(a, start: {2, 0}, stop: {4, 5}) ==
               {:ok, binary_part(want, 2 * row, 2 * row)},
             name

      ex = Path.join([dir, "ex", name])
      meta = a.metadata

      {:ok, b} =
        ExZarr.create(
          path: ex,
          shape: meta.shape,
          chunks: meta.chunks,
          dtype: meta.dtype,
          fill_value: meta.fill_value,
          zarr_format: meta.zarr_format,
          codecs: meta.codecs,
          chunk_key_encoding: if(meta.zarr_format == 3, do: meta.chunk_key_encoding)
        )

      assert :ok = ExZarr.Array.set_slice(b, want), name
      assert same_metadata?(ts, ex), name
      # The bits above a sub-byte element are arbitrary on disk (tensorstore writes its fill
      # value sign-extended and the values it is given as they are): compare the low bits.
      bits = ExZarr.DType.LowPrecision.packed_bits(meta.dtype)
      unless compressed, do: assert(chunk_files(ex, bits) == chunk_files(ts, bits), name)
    end

    assert run(["verify", dir]) == []
  end

  defp run(args) do
    out = Python.run!(File.read!(@script), args)
    out |> String.split("\n", trim: true) |> List.last() |> :jiffy.decode([:return_maps])
  end

  defp same_metadata?(ts, ex) do
    case {read_json(ts, "zarr.json"), read_json(ex, "zarr.json")} do
      {nil, nil} -> pick(read_json(ts, ".zarray")) == pick(read_json(ex, ".zarray"))
      {a, b} -> pick(a) == pick(b)
    end
  end

  defp pick(json), do: Map.take(json, ~w(data_type dtype fill_value shape))

  defp read_json(dir, file) do
    case File.read(Path.join(dir, file)) do
      {:ok, json} -> :jiffy.decode(json, [:return_maps])
      {:error, _} -> nil
    end
  end

  defp chunk_files(path, bits), do: NumcodecsPeer.chunk_files(path, &low_bits(&1, bits))

  defp low_bits(data, nil), do: data

  defp low_bits(data, {bits, _signed}),
    do: for(<<byte <- data>>, into: <<>>, do: <<Bitwise.band(byte, (1 <<< bits) - 1)>>)
end
