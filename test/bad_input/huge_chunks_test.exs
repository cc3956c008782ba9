defmodule ExZarr.BadInput.HugeChunksTest do
  @moduledoc """
  Chunk shapes far too large to allocate (2^47 bytes), whether asked for by a caller or found in
  a hostile `.zarray`, and selections over 2^40 chunks: creating or opening such an array gives
  `{:error, {:too_large, :chunk, _, _}}`, and every operation that still reaches them (with the
  limit raised) gives `{:error, _}` (streams may raise), never a VM crash.
  Each scenario runs in a child BEAM (`ExZarr.Test.ChildBeam`), so that a VM abort fails the
  test instead of killing the test run.
  """
  use ExUnit.Case, async: true

  import Bitwise

  alias ExZarr.Test.{ChildBeam, Interop}

  @huge 140_737_488_355_328

  setup do
    dir = Interop.tmp_dir!("huge-chunks")
    on_exit(fn -> File.rm_rf!(dir) end)
    %{dir: dir}
  end

  defp in_child(code), do: ChildBeam.run(code)

  # Chunks this large are refused when created or opened (see the tests at the end); the
  # paths below are what a caller who raised the `:max_bytes` limit beyond the machine's
  # memory reaches, and they must fail cleanly too.
  @create """
  Application.put_env(:ex_zarr, :max_bytes, #{1 <<< 62})
  {:ok, a} =
    ExZarr.create(shape: {#{2 * @huge}}, chunks: {#{@huge}}, dtype: :uint8, storage: :memory)
  """

  test "creating an array of huge chunks is refused" do
    assert {:error, {:too_large, :chunk, @huge, _}} =
             ExZarr.create(shape: {2 * @huge}, chunks: {@huge}, dtype: :uint8, storage: :memory)

    assert {:error, {:too_large, :chunk, _, _}} =
             ExZarr.create(
               shape: {2 * @huge},
               chunks: {@huge},
               shards: {2 * @huge},
               dtype: :uint8,
               storage: :memory
             )
  end

  test "get_slice of a whole huge chunk" do
    {out, status} =
      in_child(@create <> "IO.inspect(ExZarr.Array.get_slice(a, start: {0}, stop: {#{@huge}}))")

    assert status == 0, out
    assert out =~ "{:error,"
  end

  test "a small set_slice into a huge missing chunk" do
    {out, status} =
      in_child(
        @create <> "IO.inspect(ExZarr.Array.set_slice(a, <<1, 2, 3, 4>>, start: {0}, stop: {4}))"
      )

    assert status == 0, out
    assert out =~ "{:error,"
  end

  test "chunk_stream over huge missing chunks" do
    code = """
    try do
      IO.inspect(Enum.take(ExZarr.Array.chunk_stream(a, parallel: 1), 1) |> length())
    rescue
      e -> IO.puts("raised " <> Exception.message(e))
    end
    """

    {out, status} = in_child(@create <> code)
    assert status == 0, out
    assert out =~ "raised" or out =~ ":error", out
  end

  test "get_slice over 2^40 one-byte chunks (a 1 TiB result)" do
    code = """
    {:ok, b} =
      ExZarr.create(shape: {#{1 <<< 40}, #{1 <<< 40}}, chunks: {1, 1}, dtype: :uint8,
                    storage: :memory)
    IO.inspect(ExZarr.Array.get_slice(b, start: {0, 0}, stop: {#{1 <<< 20}, #{1 <<< 20}}))
    """

    {out, status} = in_child(code)
    assert status == 0, out
    assert out =~ "{:error,"
  end

  test "a hostile .zarray with huge chunks", %{dir: dir} do
    path = Path.join(dir, "a.zarr")
    File.mkdir_p!(path)

    meta = %{
      zarr_format: 2,
      shape: [2 * @huge],
      chunks: [@huge],
      dtype: "|u1",
      compressor: nil,
      fill_value: 0,
      order: "C",
      filters: nil
    }

    File.write!(Path.join(path, ".zarray"), Interop.encode_json(meta))

    code = """
    case ExZarr.open(path: #{inspect(path)}) do
      {:ok, a} -> IO.inspect(ExZarr.Array.set_slice(a, <<1>>, start: {5}, stop: {6}))
      error -> IO.inspect(error)
    end
    """

    {out, status} = in_child(code)
    assert status == 0, out
    assert out =~ "{:error, {:too_large, :chunk"
    assert File.ls!(path) == [".zarray"]
  end
end
