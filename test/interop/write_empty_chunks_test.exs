defmodule ExZarr.Interop.WriteEmptyChunksTest do
  @moduledoc """
  `write_empty_chunks` as zarr-python's default: a chunk that is entirely fill value is not
  stored and an existing one is deleted (NaN equals NaN, +0.0 differs from -0.0); the option
  `write_empty_chunks: true` stores it. Checked on the files themselves.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.Interop

  setup do
    dir = Interop.tmp_dir!("write-empty-chunks")
    on_exit(fn -> File.rm_rf!(dir) end)
    %{path: Path.join(dir, "a.zarr")}
  end

  defp create(path, opts) do
    defaults = [
      shape: {8, 8},
      chunks: {4, 4},
      dtype: :int32,
      storage: :filesystem,
      path: path,
      zarr_format: 3,
      compressor: nil,
      fill_value: 0
    ]

    assert {:ok, array} = ExZarr.create(Keyword.merge(defaults, opts))
    array
  end

  defp int32s(n, value), do: String.duplicate(<<value::32-signed-little>>, n)
  defp float64s(n, bits), do: String.duplicate(bits, n)

  @nan <<0, 0, 0, 0, 0, 0, 0xF8, 0x7F>>
  @neg_zero <<0, 0, 0, 0, 0, 0, 0, 0x80>>
  @pos_zero <<0::64>>

  defp chunk_files(path) do
    path
    |> Path.join("**")
    |> Path.wildcard(match_dot: true)
    |> Enum.filter(&File.regular?/1)
    |> Enum.map(&Path.relative_to(&1, path))
    |> Enum.reject(&(Path.basename(&1) in ~w(zarr.json .zarray .zattrs .zgroup)))
    |> Enum.sort()
  end

  @chunk00 [start: {0, 0}, stop: {4, 4}]

  test "a chunk written entirely with the fill value is not stored", %{path: path} do
    a = create(path, [])
    assert :ok = ExZarr.Array.set_slice(a, int32s(16, 0), @chunk00)
    assert chunk_files(path) == []
    assert {:ok, bin} = ExZarr.Array.get_slice(a, @chunk00)
    assert bin == int32s(16, 0)
  end

  test "a stored chunk overwritten with the fill value is deleted", %{path: path} do
    a = create(path, [])
    assert :ok = ExZarr.Array.set_slice(a, int32s(16, 5), @chunk00)
    assert chunk_files(path) == ["c/0/0"]
    assert :ok = ExZarr.Array.set_slice(a, int32s(16, 0), @chunk00)
    assert chunk_files(path) == []
  end

  test "a partial write that leaves a chunk all fill deletes it", %{path: path} do
    a = create(path, fill_value: -1)
    one = [start: {5, 6}, stop: {6, 7}]
    assert :ok = ExZarr.Array.set_slice(a, int32s(1, 9), one)
    assert chunk_files(path) == ["c/1/1"]
    assert :ok = ExZarr.Array.set_slice(a, int32s(1, -1), one)
    assert chunk_files(path) == []
  end

  test "an edge chunk whose in-bounds part is fill is not stored", %{path: path} do
    a = create(path, shape: {6, 6})
    assert :ok = ExZarr.Array.set_slice(a, int32s(4, 0), start: {4, 4}, stop: {6, 6})
    assert chunk_files(path) == []
    assert :ok = ExZarr.Array.set_slice(a, int32s(4, 3), start: {4, 4}, stop: {6, 6})
    assert chunk_files(path) == ["c/1/1"]
  end

  test "write_empty_chunks: true stores all-fill chunks", %{path: path} do
    a = create(path, write_empty_chunks: true)
    assert :ok = ExZarr.Array.set_slice(a, int32s(16, 0), @chunk00)
    assert chunk_files(path) == ["c/0/0"]
  end

  test "write_empty_chunks: true given to open stores all-fill chunks", %{path: path} do
    create(path, compressor: %{id: "gzip", level: 1})
    assert {:ok, a} = ExZarr.open(path: path, write_empty_chunks: true)
    assert :ok = ExZarr.Array.set_slice(a, int32s(16, 0), @chunk00)
    assert chunk_files(path) == ["c/0/0"]
    assert {:ok, a} = ExZarr.open(path: path)
    assert :ok = ExZarr.Array.set_slice(a, int32s(16, 0), @chunk00)
    assert chunk_files(path) == []
  end

  test "NaN chunks equal a NaN fill and are not stored (v2)", %{path: path} do
    a = create(path, zarr_format: 2, dtype: :float64, fill_value: :nan)
    assert :ok = ExZarr.Array.set_slice(a, float64s(16, @nan), @chunk00)
    assert chunk_files(path) == []
    assert :ok = ExZarr.Array.set_slice(a, float64s(16, @pos_zero), @chunk00)
    assert chunk_files(path) == ["0.0"]
  end

  test "-0.0 differs from a 0.0 fill, so the chunk is stored (v2)", %{path: path} do
    a = create(path, zarr_format: 2, dtype: :float64, fill_value: 0.0)
    assert :ok = ExZarr.Array.set_slice(a, float64s(16, @neg_zero), @chunk00)
    assert chunk_files(path) == ["0.0"]
    assert {:ok, bin} = ExZarr.Array.get_slice(a, @chunk00)
    assert bin == float64s(16, @neg_zero)
  end

  test "write_chunk with all-fill data stores nothing and deletes the old chunk", %{path: path} do
    a = create(path, zarr_format: 2, dimension_separator: "/", fill_value: 7)
    assert :ok = ExZarr.Array.write_chunk(a, {1, 0}, int32s(16, 8))
    assert chunk_files(path) == ["1/0"]
    assert :ok = ExZarr.Array.write_chunk(a, {1, 0}, int32s(16, 7))
    assert chunk_files(path) == []
    assert {:error, :not_found} = ExZarr.Array.read_chunk(a, {1, 0})
  end
end
