defmodule ExZarr.BadInput.ApiMisuseTest do
  @moduledoc """
  Wrong-size data, out-of-bounds and malformed selections, chunk coordinates outside the grid and
  invalid creation options: each gives `{:error, _}` (never a raise) and leaves the stored files
  byte-identical; a failed create writes nothing.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.{Interop, Snapshot}

  @data for i <- 1..64, into: <<>>, do: <<i::32-signed-little>>

  setup do
    dir = Interop.tmp_dir!("api-misuse")
    on_exit(fn -> File.rm_rf!(dir) end)
    path = Path.join(dir, "a.zarr")

    assert {:ok, a} =
             ExZarr.create(
               shape: {8, 8},
               chunks: {4, 4},
               dtype: :int32,
               storage: :filesystem,
               path: path,
               zarr_format: 3,
               compressor: %{id: "gzip", level: 5},
               fill_value: 0
             )

    assert :ok = ExZarr.Array.set_slice(a, @data, start: {0, 0}, stop: {8, 8})
    %{dir: dir, array: a, before: Snapshot.take(dir)}
  end

  defp assert_unchanged(ctx) do
    assert Snapshot.diff(ctx.before, Snapshot.take(ctx.dir)) == []
    assert {:ok, bin} = ExZarr.Array.get_slice(ctx.array, start: {0, 0}, stop: {8, 8})
    assert bin == @data
  end

  @bad_selections [
    {"stop past the end", [start: {0, 0}, stop: {9, 8}]},
    {"start past the end", [start: {8, 9}, stop: {8, 9}]},
    {"negative start", [start: {-1, 0}, stop: {2, 2}]},
    {"start after stop", [start: {4, 4}, stop: {2, 2}]},
    {"rank too small", [start: {0}, stop: {4}]},
    {"rank too large", [start: {0, 0, 0}, stop: {1, 1, 1}]},
    {"non-integer bounds", [start: {0.0, 0}, stop: {2, 2}]}
  ]

  for {label, sel} <- @bad_selections do
    @tag sel: sel
    test "get_slice with #{label}", ctx do
      assert {:error, _} = ExZarr.Array.get_slice(ctx.array, ctx.sel)
      assert_unchanged(ctx)
    end

    @tag sel: sel
    test "set_slice with #{label}", ctx do
      assert {:error, _} = ExZarr.Array.set_slice(ctx.array, <<0::32>>, ctx.sel)
      assert_unchanged(ctx)
    end
  end

  for {label, size} <- [
        {"one element short", 15 * 4},
        {"one element long", 17 * 4},
        {"not a whole number of elements", 16 * 4 - 1},
        {"empty", 0}
      ] do
    @tag size: size
    test "set_slice with data #{label}", ctx do
      data = :binary.copy(<<9>>, ctx.size)
      assert {:error, _} = ExZarr.Array.set_slice(ctx.array, data, start: {2, 2}, stop: {6, 6})
      assert_unchanged(ctx)
    end
  end

  for coords <- [{2, 0}, {0, 2}, {-1, 0}, {0}, {0, 0, 0}] do
    @tag coords: coords
    test "read_chunk and write_chunk outside the grid: #{inspect(coords)}", ctx do
      assert {:error, reason} = ExZarr.Array.read_chunk(ctx.array, ctx.coords)
      assert reason != :not_found, "coordinates outside the grid are not a missing chunk"

      assert {:error, _} =
               ExZarr.Array.write_chunk(ctx.array, ctx.coords, :binary.copy(<<1>>, 64))

      assert_unchanged(ctx)
    end
  end

  for size <- [0, 60, 68, 63] do
    @tag size: size
    test "write_chunk with #{size} bytes for a 64-byte chunk", ctx do
      assert {:error, _} =
               ExZarr.Array.write_chunk(ctx.array, {1, 1}, :binary.copy(<<1>>, ctx.size))

      assert_unchanged(ctx)
    end
  end

  test "an empty selection reads as an empty binary", ctx do
    assert {:ok, ""} = ExZarr.Array.get_slice(ctx.array, start: {3, 3}, stop: {3, 8})
  end

  @bad_creates [
    {"zero chunk size", [chunks: {0, 4}]},
    {"negative shape", [shape: {-1, 8}]},
    {"chunk rank mismatch", [chunks: {4}]},
    {"unknown dtype", [dtype: :int33]},
    {"fill value out of int8 range", [dtype: :int8, fill_value: 300]},
    {"float fill for an integer dtype", [fill_value: 1.5]},
    {"bad order", [order: "X"]},
    {"zarr_format 4", [zarr_format: 4]},
    {"bad dimension_separator", [zarr_format: 2, dimension_separator: "/../"]},
    {"bad chunk key separator", [chunk_key_encoding: %{name: "default", separator: "-"}]},
    {"bad endian", [endian: :middle]},
    {"gzip level out of range", [compressor: %{id: "gzip", level: 42}]}
  ]

  for {label, opts} <- @bad_creates do
    @tag opts: opts
    test "create with #{label} writes nothing", ctx do
      path = Path.join(ctx.dir, "new.zarr")

      base = [
        shape: {8, 8},
        chunks: {4, 4},
        dtype: :int32,
        storage: :filesystem,
        path: path,
        zarr_format: 3,
        fill_value: 0
      ]

      assert {:error, _} = ExZarr.create(Keyword.merge(base, ctx.opts))
      assert_unchanged(ctx)
    end
  end

  test "create over an existing array is refused and leaves it untouched", ctx do
    assert {:error, _} =
             ExZarr.create(
               shape: {2},
               chunks: {2},
               dtype: :uint8,
               storage: :filesystem,
               path: Path.join(ctx.dir, "a.zarr"),
               zarr_format: 2
             )

    assert_unchanged(ctx)
  end

  test "create below an existing array is refused and leaves it untouched", ctx do
    assert {:error, _} =
             ExZarr.create(
               shape: {2},
               chunks: {2},
               dtype: :uint8,
               path: Path.join(ctx.dir, "a.zarr"),
               prefix: "inner/arr"
             )

    assert_unchanged(ctx)
  end

  test "create with an unknown compressor names it", ctx do
    path = Path.join(ctx.dir, "new.zarr")

    assert {:error, {:unsupported_codec, "my_codec"}} =
             ExZarr.create(
               shape: {8},
               chunks: {4},
               dtype: :int32,
               storage: :filesystem,
               path: path,
               compressor: %{id: "my_codec"}
             )

    assert_unchanged(ctx)
  end
end
