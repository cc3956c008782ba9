defmodule ExZarr.Storage.Zip.FormatTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.Zip.Format

  defp directory_round_trip(entries, cd_offset) do
    tail = IO.iodata_to_binary(Format.directory(entries, cd_offset))
    {:ok, found} = Format.find_directory(tail, cd_offset)
    assert found.offset == cd_offset
    assert found.count == length(entries)
    {:ok, parsed} = Format.parse_directory(binary_part(tail, 0, found.size))
    parsed
  end

  test "central directory entries round-trip, with ZIP64 fields past 4 GiB" do
    small = Format.new_entry("c/0/0", 0, 123, 456)

    big = %{
      Format.new_entry("ünï/big", 5_000_000_000, 7, 6_000_000_000)
      | compressed_size: 4_294_967_295
    }

    entries = [small, big]
    assert directory_round_trip(entries, 9_000_000_000) == entries
    assert directory_round_trip([small], 1000) == [small]
    assert directory_round_trip([], 0) == []
  end

  test "local headers carry ZIP64 sizes for values of 4 GiB or more" do
    header = Format.local_header(Format.new_entry("k", 0, 1, 4_294_967_296))
    assert Format.local_header_tail(binary_part(header, 0, 30)) == {:ok, 1 + 20}

    assert <<_::binary-30, "k", 1::little-16, 16::little-16, 4_294_967_296::little-64, _::binary>> =
             header
  end

  test "an end record is found behind an archive comment, and junk is refused" do
    tail = IO.iodata_to_binary(Format.directory([], 0))
    <<head::binary-20, 0::little-16>> = tail
    commented = head <> <<5::little-16>> <> "hello"
    assert {:ok, %{count: 0, offset: 0, size: 0}} = Format.find_directory(commented, 0)
    assert Format.find_directory("PK\x05\x06 but not really", 0) == {:error, :not_a_zip_file}
    assert Format.parse_directory("garbage") == {:error, :bad_central_directory}
    assert Format.local_header_tail(:binary.copy("x", 30)) == {:error, :bad_local_header}
  end

  test "a ZIP64 record outside the tail is asked for" do
    entries = for i <- 1..70_000, do: Format.new_entry("c/#{i}", i, 0, 0)
    tail = IO.iodata_to_binary(Format.directory(entries, 123))
    last = binary_part(tail, byte_size(tail) - 50, 50)

    assert {:need_zip64_record, record_offset} =
             Format.find_directory(last, 123 + byte_size(tail) - 50)

    assert {:ok, %{count: 70_000, offset: 123}} =
             Format.parse_zip64_eocd(binary_part(tail, record_offset - 123, 56))
  end
end
