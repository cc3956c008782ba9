defmodule ExZarr.Storage.FilesystemHugeReadTest do
  # Reads of 4 MiB and more into a binary ask for transparent huge pages (c_src/nif_io.c,
  # prefer_huge_pages): the bytes are the same, and where the kernel's THP mode allows it the
  # read faults in far fewer pages than one per 4 KiB. Not async: the page faults are counted
  # for the whole VM.
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
