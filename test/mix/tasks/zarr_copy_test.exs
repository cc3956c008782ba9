defmodule Mix.Tasks.Zarr.CopyTest do
  # Mix.shell/0 and the captured stderr are global.
  use ExUnit.Case, async: false

  import ExUnit.CaptureIO
  alias ExZarr.Array
  alias ExZarr.Test.MixTask

  @moduletag :tmp_dir

  defp copy(args), do: MixTask.run(Mix.Tasks.Zarr.Copy, args)

  test "copies with rechunking, recompression and format conversion", %{tmp_dir: dir} do
    src = Path.join(dir, "a.zarr")
    {:ok, a} = ExZarr.create(path: src, shape: {20, 12}, chunks: {20, 1}, dtype: :int16)
    data = for i <- 0..239, into: <<>>, do: <<i * 3::little-signed-16>>
    :ok = Array.set_slice(a, data)

    dst = Path.join(dir, "b.zarr")
    args = [src, dst, "--chunks", "2,12", "--zarr-format", "2", "--compressor", "zlib:1"]
    stderr = capture_io(:stderr, fn -> assert {0, "copied " <> _, ""} = copy(args) end)
    # column chunks to row chunks: one unit decodes each source chunk once (not 10 units
    # each decoding them all)
    assert stderr =~ "1/1 units"

    {:ok, b} = ExZarr.open(path: dst)
    assert b.metadata.zarr_format == 2 and b.metadata.chunks == {2, 12}
    assert [%{name: "numcodecs.zlib"} | _] = Enum.reject(b.metadata.codecs, &(&1.name == "bytes"))
    assert Array.get_slice!(b) == data

    sharded = Path.join(dir, "s.zarr")

    assert {0, _, ""} =
             copy([src, sharded, "--chunks", "5,3", "--shards", "10,6", "--no-progress"])

    {:ok, s} = ExZarr.open(path: sharded)
    assert s.metadata.chunks == {10, 6}
    assert Array.get_slice!(s) == data

    # column chunks to row chunks in 1 KB: through an intermediate array in --temp
    rows = Path.join(dir, "r.zarr")
    temp = Path.join(dir, "temp")
    args = [src, rows, "--chunks", "1,12", "--max-memory", "1KB", "--temp", temp]
    assert {0, out, ""} = copy(args ++ ["--no-progress"])
    assert out =~ "through intermediate chunks"
    assert Array.get_slice!(elem(ExZarr.open(path: rows), 1)) == data
    assert {1, "", err} = copy([src, Path.join(dir, "x.zarr"), "--max-memory", "lots"])
    assert err =~ "--max-memory"
  end

  test "bad command lines are refused", %{tmp_dir: dir} do
    src = Path.join(dir, "a.zarr")
    {:ok, _} = ExZarr.create(path: src, shape: {4}, chunks: {2}, dtype: :uint8)
    dst = Path.join(dir, "b.zarr")
    assert {1, "", err} = copy([src])
    assert err =~ "takes SRC and DST"
    assert {1, "", err} = copy([src, dst, "--bogus"])
    assert err =~ "--bogus"
    assert {1, "", err} = copy([src, dst, "--chunks", "2,x"])
    assert err =~ "--chunks"
    assert {1, "", err} = copy([src, dst, "--compressor", "zstd:high"])
    assert err =~ "--compressor"
    assert {1, "", err} = copy([Path.join(dir, "none.zarr"), dst])
    assert err =~ "no Zarr array or group there"
    refute File.exists?(dst)
  end
end
