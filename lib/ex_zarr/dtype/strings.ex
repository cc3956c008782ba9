defmodule ExZarr.DType.Strings do
  @moduledoc """
  Lists of Elixir strings <-> the packed binaries of the fixed-length string types.

    * `{:fixed_utf32, n}` (numpy `<U n`): each element is `n` UCS4 code points, little-endian,
      padded with zero code points; unpacking drops the trailing zero code points (as numpy
      does) and gives UTF-8 strings.
    * `{:fixed_bytes, n}` (numpy `S n`): each element is `n` bytes padded with zero bytes;
      unpacking drops the trailing zero bytes.
    * `{:raw_bytes, n}` (numpy `V n`): each element is `n` raw bytes, unpacked as they are.

  Unpacking returns sub-binaries of the input for the byte types (no copies).

      iex> {:ok, bin} = ExZarr.DType.Strings.pack(["ab", "é"], {:fixed_utf32, 2})
      iex> bin
      <<?a, 0, 0, 0, ?b, 0, 0, 0, 0xE9, 0, 0, 0, 0, 0, 0, 0>>
      iex> ExZarr.DType.Strings.unpack(bin, {:fixed_utf32, 2})
      {:ok, ["ab", "é"]}
      iex> ExZarr.DType.Strings.pack(["abc"], {:fixed_bytes, 2})
      {:error, {:too_long, "abc", max_bytes: 2}}

  With an array (numpy `<U4`, v3 `fixed_length_utf32`):

      iex> {:ok, a} = ExZarr.create(shape: {2}, dtype: {:fixed_utf32, 4}, storage: :memory)
      iex> {:ok, packed} = ExZarr.DType.Strings.pack(["zarr", "é"], {:fixed_utf32, 4})
      iex> :ok = ExZarr.Array.set_slice(a, packed)
      iex> {:ok, data} = ExZarr.Array.get_slice(a)
      iex> ExZarr.DType.Strings.unpack(data, {:fixed_utf32, 4})
      {:ok, ["zarr", "é"]}
  """

  alias ExZarr.DType

  @type string_dtype :: {:fixed_utf32 | :fixed_bytes | :raw_bytes, pos_integer()}

  @doc "Packs a list of strings (UTF-8 for `:fixed_utf32`, any bytes otherwise)."
  @spec pack([binary()], string_dtype()) :: {:ok, binary()} | {:error, term()}
  def pack(strings, {kind, _} = dtype) when is_list(strings) do
    size = DType.itemsize(dtype)

    strings
    |> ExZarr.Result.map_ok(&encode(&1, kind, size))
    |> case do
      {:ok, parts} -> {:ok, IO.iodata_to_binary(parts)}
      error -> error
    end
  end

  defp encode(string, :fixed_utf32, size) when is_binary(string) do
    case :unicode.characters_to_binary(string, :utf8, {:utf32, :little}) do
      ucs4 when is_binary(ucs4) and byte_size(ucs4) <= size -> {:ok, padded(ucs4, size)}
      ucs4 when is_binary(ucs4) -> {:error, {:too_long, string, max_chars: div(size, 4)}}
      _ -> {:error, {:invalid_utf8, string}}
    end
  end

  defp encode(bytes, _kind, size) when is_binary(bytes) and byte_size(bytes) <= size,
    do: {:ok, padded(bytes, size)}

  defp encode(bytes, _kind, size) when is_binary(bytes),
    do: {:error, {:too_long, bytes, max_bytes: size}}

  defp encode(other, _kind, _size), do: {:error, {:not_a_binary, other}}

  defp padded(bin, size) when byte_size(bin) == size, do: bin
  defp padded(bin, size), do: [bin | :binary.copy(<<0>>, size - byte_size(bin))]

  @doc """
  Unpacks a binary of packed elements into a list of strings. An element that is not valid
  UCS4 gives `{:error, {:invalid_ucs4, element}}`.
  """
  @spec unpack(binary(), string_dtype()) :: {:ok, [binary()]} | {:error, term()}
  def unpack(data, {kind, _} = dtype) when is_binary(data) do
    size = DType.itemsize(dtype)

    if rem(byte_size(data), size) == 0 do
      items = for <<item::binary-size(size) <- data>>, do: item

      case kind do
        :raw_bytes -> {:ok, items}
        :fixed_bytes -> {:ok, Enum.map(items, &trim(&1, 1))}
        :fixed_utf32 -> ExZarr.Result.map_ok(items, &decode_ucs4/1)
      end
    else
      {:error, {:wrong_data_size, item_size: size, got: byte_size(data)}}
    end
  end

  defp decode_ucs4(item) do
    case :unicode.characters_to_binary(trim(item, 4), {:utf32, :little}, :utf8) do
      utf8 when is_binary(utf8) -> {:ok, utf8}
      _ -> {:error, {:invalid_ucs4, item}}
    end
  end

  # Drops trailing all-zero units of `unit` bytes (a sub-binary of the input).
  defp trim(item, unit), do: binary_part(item, 0, kept(item, byte_size(item), unit))

  defp kept(_item, 0, _unit), do: 0

  defp kept(item, len, unit) do
    if :binary.part(item, len - unit, unit) == <<0::size(unit * 8)>>,
      do: kept(item, len - unit, unit),
      else: len
  end
end
