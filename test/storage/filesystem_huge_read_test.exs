defmodule ExZarr.Storage.FilesystemHugeReadTest do
  # File reads of 4 MiB and more, and the output buffers of reads and codecs as large, ask for
  # transparent huge pages (xz_prefer_huge_pages in c_src/nif_util.c): the bytes are the same,
  # and where the kernel's THP mode allows it a read faults in far fewer pages than one per
  # 4 KiB. Not async: the page faults are counted for the whole VM.
  use ExUnit.Case, async: false

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

  test "a large read into a fresh binary faults in huge pages where THP is on", %{
    store: store,
    tmp_dir: dir
  } do
    # Larger than any binary made so far, and written piece by piece, so that the read's
    # binary is memory the VM has not touched yet.
    block = :crypto.strong_rand_bytes(1024 * 1024)
    File.write!(Path.join(dir, "a/fresh"), List.duplicate(block, 96))

    if thp_mode() in ["always", "madvise"] do
      before = minor_faults()
      assert {:ok, read} = Storage.get(store, "a/fresh")
      faults = minor_faults() - before
      assert read == :binary.copy(block, 96)
      # 24,576 small pages; with huge pages 48 and the VM's own few.
      assert faults < 2_000, "#{faults} page faults for a 96 MiB read"
    end
  end

  test "a large multi-chunk read decodes into huge pages where THP is on", %{tmp_dir: dir} do
    # 96 MiB of float64 in 12 zstd chunks, written slab by slab so that the read's output
    # buffer is memory the VM has not touched yet.
    array = zstd_array(Path.join(dir, "arr"), {3072, 4096}, {256, 4096})

    slab = for i <- 0..(256 * 4096 - 1), into: <<>>, do: <<rem(i, 1000) * 0.5::float-64-little>>

    for r <- 0..11,
        do:
          :ok =
            ExZarr.Array.set_slice(array, slab, start: {r * 256, 0}, stop: {r * 256 + 256, 4096})

    if thp_mode() in ["always", "madvise"] do
      before = minor_faults()
      read = ExZarr.Array.get_slice!(array)
      faults = minor_faults() - before
      assert read == :binary.copy(slab, 12)
      # 24,576 small pages for the output alone.
      assert faults < 6_000, "#{faults} page faults for a 96 MiB read"
    end
  end

  test "a large chunk decodes into huge pages where THP is on", %{tmp_dir: dir} do
    # One 128 MiB zstd chunk (larger than the buffers of the other tests, which the VM may
    # keep for reuse): the decoder's output binary is the large buffer here.
    array = zstd_array(Path.join(dir, "one"), {4096, 4096}, {4096, 4096})

    row = for i <- 0..4095, into: <<>>, do: <<i * 0.25::float-64-little>>
    data = :binary.copy(row, 4096)
    :ok = ExZarr.Array.set_slice(array, data)

    if thp_mode() in ["always", "madvise"] do
      before = minor_faults()
      read = ExZarr.Array.get_slice!(array)
      faults = minor_faults() - before
      assert read == data
      assert faults < 6_000, "#{faults} page faults for a 128 MiB chunk"
    end
  end

  defp zstd_array(path, shape, chunks) do
    compressor = %{id: "zstd", level: 1}

    ExZarr.create!(
      [shape: shape, chunks: chunks, dtype: :float64, compressor: compressor] ++
        [storage: :filesystem, path: path]
    )
  end

  defp thp_mode do
    case File.read("/sys/kernel/mm/transparent_hugepage/enabled") do
      {:ok, text} -> with [_, mode] <- Regex.run(~r/\[(\w+)\]/, text), do: mode
      _ -> nil
    end
  end

  defp minor_faults do
    [_, after_name] = String.split(File.read!("/proc/self/stat"), ") ", parts: 2)
    after_name |> String.split(" ") |> Enum.at(7) |> String.to_integer()
  end
end
