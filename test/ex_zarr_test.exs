defmodule ExZarrTest do
  use ExUnit.Case, async: true

  doctest ExZarr

  @moduletag :tmp_dir

  test "create writes metadata that open reads back, on the filesystem", %{tmp_dir: dir} do
    for format <- [2, 3] do
      path = Path.join(dir, "a#{format}.zarr")

      {:ok, a} =
        ExZarr.create(
          shape: {10, 20},
          chunks: {5, 5},
          dtype: :int32,
          path: path,
          zarr_format: format
        )

      :ok = ExZarr.Array.set_slice(a, :binary.copy(<<-3::32-signed-little>>, 200))
      {:ok, b} = ExZarr.open(path: "file://" <> path)

      assert b.metadata.shape == {10, 20}
      assert b.metadata.chunks == {5, 5}
      assert b.metadata.dtype == :int32
      assert b.metadata.zarr_format == format
      assert ExZarr.Array.get_slice(b) == {:ok, :binary.copy(<<-3::32-signed-little>>, 200)}
    end
  end

  test "creating over an existing array is an error unless overwrite: true", %{tmp_dir: dir} do
    opts = [shape: {2}, chunks: {2}, dtype: :uint8, path: dir]
    assert {:ok, a} = ExZarr.create(opts)
    :ok = ExZarr.Array.set_slice(a, <<1, 2>>)
    assert {:error, {:already_exists, ""}} = ExZarr.create(opts)
    assert {:ok, b} = ExZarr.create([overwrite: true, fill_value: 5] ++ opts)
    assert ExZarr.Array.get_slice(b) == {:ok, <<5, 5>>}
  end

  test "open takes a bare path or URL", %{tmp_dir: dir} do
    {:ok, _} = ExZarr.create(shape: {2}, chunks: {2}, dtype: :uint8, path: dir)
    assert {:ok, %ExZarr.Array{}} = ExZarr.open(dir)
    assert {:ok, %ExZarr.Array{}} = ExZarr.open("file://" <> dir)
  end

  test "opening a missing array is an error", %{tmp_dir: dir} do
    assert {:error, :not_found} = ExZarr.open(path: Path.join(dir, "missing"))
    assert_raise ExZarr.Error, fn -> ExZarr.open!(path: Path.join(dir, "missing")) end
  end

  test "invalid options are errors naming the option" do
    assert {:error, _} = ExZarr.create(shape: {2}, chunks: {0}, dtype: :uint8)
    assert {:error, _} = ExZarr.create(shape: {2}, chunks: {2}, dtype: :nope)

    assert {:error, {:unsupported_codec, "nope"}} =
             ExZarr.create(
               shape: {2},
               chunks: {2},
               dtype: :uint8,
               codecs: [%{name: "nope", configuration: %{}}]
             )
  end
end
