defmodule ExZarr.BadInput.NativeParamsTest do
  @moduledoc """
  Codec parameters the native libraries cannot take, given to the NIFs directly (the Elixir
  codecs refuse them first, see `ExZarr.Codecs.ConfigTest`): the NIF returns `{:error, _}`
  itself, and a hostile `zarr.json` carrying them does not open. Run in a child BEAM: blosc
  typesizes of 2^31 and up used to stop the VM with SIGFPE.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.{ChildBeam, Interop}

  test "the NIFs refuse what their C libraries cannot run" do
    code = ~S"""
    data = :binary.copy(<<1, 2, 3, 4, 5, 6, 7, 8>>, 512)

    for ts <- [2 ** 31, 3 * 2 ** 30, 2 ** 32, 2 ** 63] do
      IO.inspect({:typesize, ExZarr.Native.blosc_compress(data, "lz4", 5, 1, ts, 0)}, width: :infinity)
    end

    IO.inspect({:blocksize, ExZarr.Native.blosc_compress(data, "lz4", 5, 1, 8, 2 ** 40)}, width: :infinity)
    IO.inspect({:level, ExZarr.Native.zstd_compress(data, 2 ** 30, false)}, width: :infinity)
    dict = [{0x21, -1, 0x60000000, -1, -1, -1, -1, -1, -1, -1, -1, -1}]
    IO.inspect({:dict, ExZarr.Native.lzma_compress(data, 1, -1, -1, dict)}, width: :infinity)
    IO.inspect({:ok_typesize, elem(ExZarr.Native.blosc_compress(data, "lz4", 5, 1, 2 ** 31 - 1, 0), 0)})
    """

    {out, status} = ChildBeam.run(code)
    assert status == 0, out

    assert length(Regex.scan(~r/\{:typesize, \{:error, \{:blosc, "typesize must be/, out)) == 4,
           out

    assert out =~ ~s({:blocksize, {:error, {:blosc, "blocksize must be)
    assert out =~ ~s({:level, {:error, {:zstd, "level must be)
    assert out =~ ~r/\{:dict, \{:error, \{:lzma, ".*memory/
    assert out =~ "{:ok_typesize, :ok}"
  end

  test "compressors refuse boxes to gather that do not fit their data" do
    code = ~S"""
    data = :binary.copy(<<1, 2, 3, 4, 5, 6, 7, 8>>, 8)

    boxes = [
      {:gather, data, {8, 8}, {7, 0}, {2, 8}, 1},
      {:gather, data, {8, 8}, {0, 0}, {8, 8}, 2},
      {:gather, data, {8, 8}, {0, 0}, {8, 8}, 0},
      {:gather, data, {8, 8}, {0}, {8, 8}, 1},
      {:gather, data, {2 ** 32, 2 ** 32}, {0, 0}, {1, 1}, 1},
      {:gather, data, {64}, {0}, {2 ** 64 - 1}, 1},
      {:gather, data, {64}, {-1}, {1}, 1},
      {:gather, data, {64}, {0}, {64}},
      {:gather, :data, {64}, {0}, {64}, 1},
      {:gatherer, data, {64}, {0}, {64}, 1}
    ]

    for box <- boxes,
        call <- [
          &ExZarr.Native.zstd_compress(&1, 3, false),
          &ExZarr.Native.lz4_compress(&1, 1),
          &ExZarr.Native.blosc_compress(&1, "lz4", 5, 1, 8, 0),
          &ExZarr.Native.lzma_compress(&1, 1, -1, -1, [])
        ] do
      try do
        IO.inspect({:accepted, box, call.(box)}, width: :infinity)
      rescue
        ArgumentError -> IO.puts("refused")
      end
    end
    """

    {out, status} = ChildBeam.run(code)
    assert status == 0, out
    refute out =~ ":accepted", out
    assert length(Regex.scan(~r/^refused$/m, out)) == 40, out
  end

  test "a zarr.json with a blosc typesize of 2^31 does not open" do
    dir = Interop.tmp_dir!("native-params")
    on_exit(fn -> File.rm_rf!(dir) end)
    path = Path.join(dir, "a.zarr")
    {:ok, _} = ExZarr.create(path: path, shape: {8}, compressor: %{id: "blosc", cname: "lz4"})
    meta = Path.join(path, "zarr.json")

    File.write!(
      meta,
      String.replace(File.read!(meta), ~s("typesize": 8), ~s("typesize": 2147483648))
    )

    code = """
    IO.inspect(ExZarr.open(path: #{inspect(path)}), width: :infinity)
    """

    {out, status} = ChildBeam.run(code)
    assert status == 0, out

    assert out =~
             ~s({:error, {:invalid_codec_config, "blosc", {:invalid_value, "typesize", 2147483648)
  end
end
