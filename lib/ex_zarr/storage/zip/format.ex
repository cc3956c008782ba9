defmodule ExZarr.Storage.Zip.Format do
  @moduledoc false
  # The parts of the ZIP format (PKWARE APPNOTE 6.3) that a Zarr zip store needs: local file
  # headers, the central directory, the end records, and ZIP64 for archives past 4 GiB or
  # 65,535 entries. Pure functions over binaries; `ExZarr.Storage.Zip` does the I/O.
  #
  # Entries are written the way Python's `zipfile` (and so zarr-python's `ZipStore`) writes
  # them: stored (no compression), sizes and CRC-32 in the local header, UTF-8 flag for
  # non-ASCII names, Unix mode 0644, ZIP64 extra fields only for values that overflow.
  import Bitwise

  @local_sig 0x04034B50
  @central_sig 0x02014B50
  @eocd_sig 0x06054B50
  @zip64_eocd_sig 0x06064B50
  @zip64_locator_sig 0x07064B50
  @max16 0xFFFF
  @max32 0xFFFFFFFF
  @utf8_flag 0x800
  @unix_mode_644 0o100644 <<< 16

  @typedoc """
  One archive member. `offset` is where its local header starts; `method` is 0 (stored) or 8
  (deflate); `flags` is the general purpose bit flag.
  """
  @type entry :: %{
          name: String.t(),
          offset: non_neg_integer(),
          method: non_neg_integer(),
          flags: non_neg_integer(),
          crc: non_neg_integer(),
          compressed_size: non_neg_integer(),
          size: non_neg_integer(),
          dos_time: {non_neg_integer(), non_neg_integer()},
          external_attr: non_neg_integer()
        }

  @doc "Size of the fixed part of a local header; the name and extra field follow it."
  @spec local_header_size() :: 30
  def local_header_size, do: 30

  @doc "A stored entry for `name` with the given CRC-32 and size, to be written at `offset`."
  @spec new_entry(String.t(), non_neg_integer(), non_neg_integer(), non_neg_integer()) :: entry()
  def new_entry(name, offset, crc, size) do
    %{
      name: name,
      offset: offset,
      method: 0,
      flags: if(ascii?(name), do: 0, else: @utf8_flag),
      crc: crc,
      compressed_size: size,
      size: size,
      dos_time: dos_time(:calendar.local_time()),
      external_attr: @unix_mode_644
    }
  end

  defp ascii?(name), do: not String.match?(name, ~r/[^\x00-\x7F]/)

  defp dos_time({{year, month, day}, {hour, minute, second}}) do
    year = min(max(year, 1980), 2107)
    {hour <<< 11 ||| minute <<< 5 ||| div(second, 2), (year - 1980) <<< 9 ||| month <<< 5 ||| day}
  end

  @doc "The local header of an entry (its data follows directly)."
  @spec local_header(entry()) :: binary()
  def local_header(entry) do
    zip64? = entry.size >= @max32 or entry.compressed_size >= @max32

    {sizes, extra} =
      if zip64?,
        do:
          {<<@max32::little-32, @max32::little-32>>,
           <<1::little-16, 16::little-16, entry.size::little-64,
             entry.compressed_size::little-64>>},
        else: {<<entry.compressed_size::little-32, entry.size::little-32>>, <<>>}

    {time, date} = entry.dos_time

    <<@local_sig::little-32, version(zip64?)::little-16, entry.flags::little-16,
      entry.method::little-16, time::little-16, date::little-16, entry.crc::little-32,
      sizes::binary, byte_size(entry.name)::little-16, byte_size(extra)::little-16,
      entry.name::binary, extra::binary>>
  end

  defp version(true), do: 45
  defp version(false), do: 20

  @doc """
  The bytes after the last entry: the central directory, then the (ZIP64 and classic) end
  records. `cd_offset` is where the central directory will start.
  """
  @spec directory([entry()], non_neg_integer()) :: iodata()
  def directory(entries, cd_offset) do
    central = Enum.map(entries, &central_entry/1)
    cd_size = IO.iodata_length(central)
    count = length(entries)
    [central, end_records(count, cd_offset, cd_size)]
  end

  defp central_entry(entry) do
    {size, z1} = overflow(entry.size)
    {csize, z2} = overflow(entry.compressed_size)
    {offset, z3} = overflow(entry.offset)
    zip64 = z1 <> z2 <> z3

    extra =
      if zip64 == <<>>,
        do: <<>>,
        else: <<1::little-16, byte_size(zip64)::little-16, zip64::binary>>

    version = version(zip64 != <<>>)
    {time, date} = entry.dos_time

    <<@central_sig::little-32, 3 <<< 8 ||| version::little-16, version::little-16,
      entry.flags::little-16, entry.method::little-16, time::little-16, date::little-16,
      entry.crc::little-32, csize::little-32, size::little-32, byte_size(entry.name)::little-16,
      byte_size(extra)::little-16, 0::little-16, 0::little-16, 0::little-16,
      entry.external_attr::little-32, offset::little-32, entry.name::binary, extra::binary>>
  end

  defp overflow(value) when value >= @max32, do: {@max32, <<value::little-64>>}
  defp overflow(value), do: {value, <<>>}

  defp end_records(count, cd_offset, cd_size) do
    if count >= @max16 or cd_offset >= @max32 or cd_size >= @max32 do
      zip64_eocd_offset = cd_offset + cd_size

      [
        <<@zip64_eocd_sig::little-32, 44::little-64, 3 <<< 8 ||| 45::little-16, 45::little-16,
          0::little-32, 0::little-32, count::little-64, count::little-64, cd_size::little-64,
          cd_offset::little-64>>,
        <<@zip64_locator_sig::little-32, 0::little-32, zip64_eocd_offset::little-64,
          1::little-32>>,
        eocd(min(count, @max16), min(cd_size, @max32), min(cd_offset, @max32))
      ]
    else
      eocd(count, cd_size, cd_offset)
    end
  end

  defp eocd(count, cd_size, cd_offset) do
    <<@eocd_sig::little-32, 0::little-16, 0::little-16, count::little-16, count::little-16,
      cd_size::little-32, cd_offset::little-32, 0::little-16>>
  end

  @doc """
  Finds the central directory from the tail of an archive: `tail` holds the last bytes of
  the file (up to 65,557 + 20 + 56 of them), which start at `tail_offset`. Returns the
  directory's offset, size and entry count.
  """
  @spec find_directory(binary(), non_neg_integer()) ::
          {:ok, %{offset: non_neg_integer(), size: non_neg_integer(), count: non_neg_integer()}}
          | {:need_zip64_record, non_neg_integer()}
          | {:error, term()}
  def find_directory(tail, tail_offset) do
    case find_eocd(tail, byte_size(tail) - 22) do
      nil ->
        {:error, :not_a_zip_file}

      pos ->
        <<_::binary-size(pos), @eocd_sig::little-32, disk::little-16, cd_disk::little-16,
          _::little-16, count::little-16, cd_size::little-32, cd_offset::little-32,
          _::binary>> = tail

        cond do
          disk != 0 or cd_disk != 0 -> {:error, :multi_disk_zip_not_supported}
          zip64_locator?(tail, pos) -> zip64_directory(tail, pos, tail_offset)
          true -> {:ok, %{offset: cd_offset, size: cd_size, count: count}}
        end
    end
  end

  # The end record is the last signature whose comment length reaches exactly to the end.
  defp find_eocd(_tail, pos) when pos < 0, do: nil

  defp find_eocd(tail, pos) do
    case tail do
      <<_::binary-size(pos), @eocd_sig::little-32, _::binary-16, comment_len::little-16,
        rest::binary>>
      when byte_size(rest) == comment_len ->
        pos

      _ ->
        find_eocd(tail, pos - 1)
    end
  end

  # Like Python's zipfile, a ZIP64 locator right before the end record means the ZIP64
  # record holds the real values, whatever the classic record says.
  defp zip64_locator?(tail, pos),
    do: pos >= 20 and binary_part(tail, pos - 20, 4) == <<@zip64_locator_sig::little-32>>

  defp zip64_directory(tail, pos, tail_offset) do
    <<_::binary-8, record_offset::little-64, _::binary>> = binary_part(tail, pos - 20, 20)
    local = record_offset - tail_offset

    if local >= 0 and local + 56 <= byte_size(tail),
      do: parse_zip64_eocd(binary_part(tail, local, 56)),
      else: {:need_zip64_record, record_offset}
  end

  @doc "Parses the 56-byte ZIP64 end of central directory record."
  @spec parse_zip64_eocd(binary()) ::
          {:ok, %{offset: non_neg_integer(), size: non_neg_integer(), count: non_neg_integer()}}
          | {:error, term()}
  def parse_zip64_eocd(
        <<@zip64_eocd_sig::little-32, _size::little-64, _made::little-16, _needed::little-16,
          _disk::little-32, _cd_disk::little-32, _on_disk::little-64, count::little-64,
          cd_size::little-64, cd_offset::little-64>>
      ),
      do: {:ok, %{offset: cd_offset, size: cd_size, count: count}}

  def parse_zip64_eocd(_), do: {:error, :bad_zip64_end_record}

  @doc "Parses a central directory into its entries, in archive order."
  @spec parse_directory(binary()) :: {:ok, [entry()]} | {:error, term()}
  def parse_directory(binary), do: parse_entries(binary, [])

  defp parse_entries(<<>>, acc), do: {:ok, Enum.reverse(acc)}

  defp parse_entries(
         <<@central_sig::little-32, _made::little-16, _needed::little-16, flags::little-16,
           method::little-16, time::little-16, date::little-16, crc::little-32, csize::little-32,
           size::little-32, name_len::little-16, extra_len::little-16, comment_len::little-16,
           _disk::little-16, _internal::little-16, external::little-32, offset::little-32,
           name::binary-size(name_len), extra::binary-size(extra_len),
           _comment::binary-size(comment_len), rest::binary>>,
         acc
       ) do
    with {:ok, {size, csize, offset}} <- apply_zip64(extra, size, csize, offset) do
      entry = %{
        name: name,
        offset: offset,
        method: method,
        flags: flags,
        crc: crc,
        compressed_size: csize,
        size: size,
        dos_time: {time, date},
        external_attr: external
      }

      parse_entries(rest, [entry | acc])
    end
  end

  defp parse_entries(_, _acc), do: {:error, :bad_central_directory}

  # The ZIP64 extra field holds, in this order, those of size, compressed size and offset
  # whose 32-bit fields are all ones.
  defp apply_zip64(
         <<1::little-16, len::little-16, data::binary-size(len), _::binary>>,
         size,
         csize,
         offset
       ) do
    {size, data} = take64(size, data)
    {csize, data} = take64(csize, data)
    {offset, _data} = take64(offset, data)

    if Enum.any?([size, csize, offset], &is_nil/1),
      do: {:error, :bad_zip64_extra_field},
      else: {:ok, {size, csize, offset}}
  end

  defp apply_zip64(
         <<_id::little-16, len::little-16, _::binary-size(len), rest::binary>>,
         size,
         csize,
         offset
       ),
       do: apply_zip64(rest, size, csize, offset)

  defp apply_zip64(_, size, csize, offset) do
    if Enum.any?([size, csize, offset], &(&1 == @max32)),
      do: {:error, :zip64_extra_field_missing},
      else: {:ok, {size, csize, offset}}
  end

  defp take64(@max32, <<value::little-64, rest::binary>>), do: {value, rest}
  defp take64(@max32, rest), do: {nil, rest}
  defp take64(value, rest), do: {value, rest}

  @doc """
  From the fixed part of a local header, how many bytes of name and extra field follow it
  (the entry's data starts after them).
  """
  @spec local_header_tail(binary()) :: {:ok, non_neg_integer()} | {:error, :bad_local_header}
  def local_header_tail(
        <<@local_sig::little-32, _::binary-22, name_len::little-16, extra_len::little-16>>
      ),
      do: {:ok, name_len + extra_len}

  def local_header_tail(_), do: {:error, :bad_local_header}
end
