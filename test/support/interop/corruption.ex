defmodule ExZarr.Test.Corruption do
  @moduledoc """
  The check behind the corrupt-chunk tests: an 8x8 int32 array in 4x4 chunks is written whole,
  its chunk (0, 0) is replaced by corrupt bytes, and then every read of that chunk, and every
  partial write that must read it first, has to give `{:error, _}`, the other chunks still
  read, and no stored file changes.

      opts = [zarr_format: 2, compressor: nil]
      ExZarr.Test.Corruption.assert_rejected(dir, opts, fn chunk -> chunk <> <<0>> end)
  """

  import ExUnit.Assertions

  alias ExZarr.Test.Snapshot

  @data for i <- 1..64, into: <<>>, do: <<i * 7919::32-signed-little>>

  @doc """
  Runs the check in `dir` for an array created with `opts`, its chunk (0, 0) replaced by
  `corrupt.(stored_bytes)`.
  """
  @spec assert_rejected(Path.t(), keyword(), (binary() -> binary())) :: :ok
  def assert_rejected(dir, opts, corrupt) do
    path = Path.join(dir, "a.zarr")
    base = [shape: {8, 8}, chunks: {4, 4}, dtype: :int32, storage: :filesystem, path: path]
    assert {:ok, a} = ExZarr.create(base ++ [fill_value: 0] ++ opts)
    assert :ok = ExZarr.Array.set_slice(a, @data, start: {0, 0}, stop: {8, 8})

    chunk_file = Path.join(path, if(opts[:zarr_format] == 2, do: "0.0", else: "c/0/0"))
    File.write!(chunk_file, corrupt.(File.read!(chunk_file)))
    before = Snapshot.take(dir)

    assert {:ok, a} = ExZarr.open(path: path)
    assert {:error, _} = ExZarr.Array.get_slice(a, start: {0, 0}, stop: {8, 8})
    assert {:error, _} = ExZarr.Array.get_slice(a, start: {1, 1}, stop: {2, 2})
    assert {:error, reason} = ExZarr.Array.read_chunk(a, {0, 0})
    assert reason != :not_found

    assert {:error, _} = ExZarr.Array.set_slice(a, <<5::32-little>>, start: {0, 0}, stop: {1, 1})

    # The intact chunk (1, 1) still reads.
    assert {:ok, got} = ExZarr.Array.get_slice(a, start: {4, 4}, stop: {5, 5})
    assert got == binary_part(@data, (4 * 8 + 4) * 4, 4)

    assert Snapshot.diff(before, Snapshot.take(dir)) == []
    :ok
  end
end
