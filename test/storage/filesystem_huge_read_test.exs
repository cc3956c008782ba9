defmodule ExZarr.Storage.FilesystemHugeReadTest do
  # Large file reads (whole and in ranges) and large decoded outputs give exactly the stored
  # bytes. (How close such a read comes to the machine's limits is measured by `make bench`,
  # workload 14.)
  use ExUnit.Case, async: true

  alias ExZarr.Storage

  @moduletag :tmp_dir
  @size 40 * 1024 * 1024

  setup %{tmp_dir: dir} do
    {:ok, store} = Storage.new(:filesystem, path: dir)
    data = :crypto.strong_rand_bytes(@size)
    :ok = Storage.put(store, "a/big", data)
    %{store: store, data: data}
  end

  test "large reads, whole and in ranges at odd offsets, give the file's bytes", %{
    store: store,
    data: data
  } do
    assert Storage.get(store, "a/big") == {:ok, data}
    assert Storage.get(store, "a/big", {1, 20_000_001}) == {:ok, binary_part(data, 1, 20_000_001)}

    assert Storage.get_ranges(store, "a/big", [{3, 5_000_000}, {:suffix, 6_000_001}, {7, 2}]) ==
             {:ok,
              [
                binary_part(data, 3, 5_000_000),
                binary_part(data, @size - 6_000_001, 6_000_001),
                binary_part(data, 7, 2)
              ]}
  end

  test "large zstd reads into large output buffers, one chunk and many, give the data", %{
    tmp_dir: dir
  } do
    row = for i <- 0..4095, into: <<>>, do: <<i * 0.25::float-64-little>>

    for {name, chunks} <- [{"one", {1024, 4096}}, {"many", {128, 4096}}] do
      array = zstd_array(Path.join(dir, name), {1024, 4096}, chunks)
      data = :binary.copy(row, 1024)
      :ok = ExZarr.Array.set_slice(array, data)
      assert ExZarr.Array.get_slice!(array) == data
    end
  end

  defp zstd_array(path, shape, chunks) do
    compressor = %{id: "zstd", level: 1}

    ExZarr.create!(
      [shape: shape, chunks: chunks, dtype: :float64, compressor: compressor] ++
        [storage: :filesystem, path: path]
    )
  end
end
