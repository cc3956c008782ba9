defmodule ExZarr.Fuzz.Bytes do
  @moduledoc """
  Hostile stored values described as small terms and built in the child BEAM (a 256 MiB
  bomb stays a few bytes in a case and in the corpus):

    * `{:random, n, seed}`: `n` pseudo-random bytes; `{:zeros, n}`; `{:text, binary}` as is
    * `{:zstd_rle, n}`: a valid zstd frame of `n` zero bytes made of RLE blocks (4 bytes per
      128 KiB), with no content size in its header
    * `{:zstd_claims, claimed, n}`: a zstd frame whose header claims `claimed` bytes of
      content and that holds `n` zero bytes
    * `{:gzip_zeros, n}` / `{:zlib_zeros, n}`: `n` zero bytes deflated (n at most 256 MiB)
    * `{:lz4_claims, claimed, payload}`: a numcodecs lz4 block claiming `claimed` bytes
    * `{:blosc_header, version, flags, typesize, nbytes, blocksize, cbytes, payload}`: a blosc
      chunk with a header of any values
    * `{:vlen, count, lengths}`: the vlen-utf8/vlen-bytes layout claiming `count` items with
      the given item lengths (bodies filled up to 64 bytes each, so lengths may lie)
    * `{:zstd_of, value}`: another value compressed with zstd (a vlen bomb: a vlen layout of
      many items, compressed)

      iex> byte_size(ExZarr.Fuzz.Bytes.build({:zstd_rle, 1 <<< 20}))
      38
  """
  import Bitwise

  @rle_block 128 * 1024
  @deflate_cap 256 * 1024 * 1024

  @typedoc "A description of stored bytes (see the moduledoc)."
  @type desc :: term()

  @doc "The bytes a description stands for."
  @spec build(desc()) :: binary()
  def build({:random, n, seed}) do
    :rand.seed(:exsss, {seed, 7, 11})
    :rand.bytes(n)
  end

  def build({:zeros, n}), do: <<0::size(n)-unit(8)>>
  def build({:text, bin}) when is_binary(bin), do: bin
  def build({:zstd_rle, n}), do: zstd_frame(<<0x00, 7 <<< 3>>, n)

  # Single segment, 8-byte content size field: the header claims `claimed` bytes.
  def build({:zstd_claims, claimed, n}),
    do: zstd_frame(<<0xE0, claimed &&& 0xFFFFFFFFFFFFFFFF::64-little>>, n)

  def build({:gzip_zeros, n}), do: deflate_zeros(min(n, @deflate_cap), 31)
  def build({:zlib_zeros, n}), do: deflate_zeros(min(n, @deflate_cap), 15)

  def build({:lz4_claims, claimed, payload}),
    do: <<claimed &&& 0xFFFFFFFF::32-little, build(payload)::binary>>

  def build({:blosc_header, version, flags, typesize, nbytes, blocksize, cbytes, payload}) do
    <<version &&& 255, 1, flags &&& 255, typesize &&& 255, nbytes &&& 0xFFFFFFFF::32-little,
      blocksize &&& 0xFFFFFFFF::32-little, cbytes &&& 0xFFFFFFFF::32-little,
      build(payload)::binary>>
  end

  def build({:vlen, count, lengths}) do
    items = Enum.map(lengths, &[<<&1 &&& 0xFFFFFFFF::32-little>>, :binary.copy("a", min(&1, 64))])
    IO.iodata_to_binary([<<count &&& 0xFFFFFFFF::32-little>> | items])
  end

  def build({:zstd_of, value}) do
    {:ok, frame} = ExZarr.Native.zstd_compress(build(value), 3, false)
    IO.iodata_to_binary(frame)
  end

  def build(bin) when is_binary(bin), do: bin

  # A zstd frame: magic, frame header, then `n` zero bytes in RLE blocks of at most 128 KiB.
  defp zstd_frame(header, n) do
    full = div(n, @rle_block)
    last = rem(n, @rle_block)
    sizes = List.duplicate(@rle_block, full) ++ if(last > 0 or full == 0, do: [last], else: [])
    count = length(sizes)

    blocks =
      sizes
      |> Enum.with_index(1)
      |> Enum.map(fn {size, i} ->
        last_flag = if i == count, do: 1, else: 0
        <<last_flag ||| 1 <<< 1 ||| size <<< 3::24-little, 0>>
      end)

    IO.iodata_to_binary([<<0xFD2FB528::32-little>>, header | blocks])
  end

  # Deflates zeros piece by piece (memory stays at one piece); cached per size and format.
  defp deflate_zeros(n, bits) do
    key = {__MODULE__, :deflate, n, bits}

    case :persistent_term.get(key, nil) do
      nil ->
        z = :zlib.open()
        :ok = :zlib.deflateInit(z, 9, :deflated, bits, 8, :default)
        piece = <<0::size(1024 * 1024)-unit(8)>>
        body = for _ <- 1..div(n, byte_size(piece))//1, do: :zlib.deflate(z, piece)
        tail = :zlib.deflate(z, binary_part(piece, 0, rem(n, byte_size(piece))), :finish)
        :zlib.close(z)
        bin = IO.iodata_to_binary([body, tail])
        :persistent_term.put(key, bin)
        bin

      bin ->
        bin
    end
  end
end
