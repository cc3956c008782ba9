defmodule ExZarr.Test.Codecs do
  @moduledoc false
  # A codec set up from its numcodecs (Zarr v2) config, as the codec tests use it.

  alias ExZarr.Codec.Registry

  @doc "The module and the state of a bytes->bytes codec given by its numcodecs config."
  @spec from_v2(map(), non_neg_integer() | nil, atom()) :: {module(), term()}
  def from_v2(v2_config, decoded_size, dtype \\ :float64) do
    {:ok, spec, :bytes_to_bytes} = Registry.from_v2(v2_config)
    {:ok, module, config} = Registry.resolve(spec)
    {:ok, state} = module.init(config, %{decoded_size: decoded_size, dtype: dtype})
    {module, state}
  end

  @doc "The chunk spec a codec sees at init: `shape` of `dtype`, fill 0, size unknown."
  @spec spec(tuple(), atom()) :: map()
  def spec(shape, dtype), do: %{shape: shape, dtype: dtype, fill_value: 0, decoded_size: nil}

  @doc "Encodes `data` and decodes the result: `{encoded binary, decode result}`."
  @spec round_trip(module(), term(), iodata()) :: {binary(), {:ok, term()} | {:error, term()}}
  def round_trip(module, state, data) do
    {:ok, encoded} = module.encode(data, state)
    encoded = IO.iodata_to_binary(encoded)
    {encoded, module.decode(encoded, state)}
  end

  @doc "The vlen layout of `items` (any bytes, UTF-8 or not), as a chunk stores it."
  @spec vlen_layout([binary()]) :: binary()
  def vlen_layout(items) do
    {:ok, layout} = ExZarr.Codecs.VlenLayout.encode(items, length(items), false)
    layout
  end

  @doc """
  A zstd frame without a content size (as streaming writers make it): a 128 KiB window and
  blocks given as `{:raw, bytes}` (128 KiB at most) or `{:rle, byte, count}`.
  """
  @spec zstd_stream_frame([{:raw, binary()} | {:rle, byte(), pos_integer()}]) :: binary()
  def zstd_stream_frame(blocks) do
    last = length(blocks) - 1

    body =
      for {block, i} <- Enum.with_index(blocks), into: <<>> do
        {type, size, payload} =
          case block do
            {:raw, bytes} -> {0, byte_size(bytes), bytes}
            {:rle, byte, count} -> {1, count, <<byte>>}
          end

        flag = if i == last, do: 1, else: 0
        <<Bitwise.bsl(size, 3) + Bitwise.bsl(type, 1) + flag::24-little, payload::binary>>
      end

    <<0xFD2FB528::32-little, 0x00, 0x38, body::binary>>
  end

  @doc "The number of blocks in a single zstd frame (its headers walked, its content not decoded)."
  @spec zstd_block_count(binary()) :: pos_integer()
  def zstd_block_count(
        <<0xFD2FB528::32-little, fcs::2, single::1, _::2, _checksum::1, dict::2, rest::binary>>
      ) do
    window = if single == 1, do: 0, else: 1
    fcs_bytes = Enum.at([single, 2, 4, 8], fcs)
    dict_bytes = Enum.at([0, 1, 2, 4], dict)
    <<_::binary-size(window + dict_bytes + fcs_bytes), blocks::binary>> = rest
    count_blocks(blocks, 0)
  end

  defp count_blocks(<<header::24-little, rest::binary>>, n) do
    last = Bitwise.band(header, 1)
    type = Bitwise.band(Bitwise.bsr(header, 1), 3)
    size = if type == 1, do: 1, else: Bitwise.bsr(header, 3)
    <<_::binary-size(size), rest::binary>> = rest
    if last == 1, do: n + 1, else: count_blocks(rest, n + 1)
  end
end
