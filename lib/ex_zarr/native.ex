defmodule ExZarr.Native do
  @moduledoc false
  # The one NIF of ExZarr (`c_src/`): compression libraries, checksums and copy kernels.
  #
  # Every function validates its arguments and returns `{:error, reason}` (or raises
  # `ArgumentError` for arguments of the wrong type) instead of crashing; decoders never
  # produce more than the `max_size` they are given. Calls on large inputs run on dirty CPU
  # schedulers.
  #
  # Shapes and offsets are tuples of non-negative integers, element data is a binary of packed
  # elements in C order; `itemsize` is the size of one element in bytes.
  @on_load :load_nif

  @doc false
  def load_nif do
    path = :filename.join(:code.priv_dir(:ex_zarr), ~c"ex_zarr_nif")
    :erlang.load_nif(path, 0)
  end

  @typedoc "A region copy: source data, its shape, where to start in it and in the destination, and how many elements along each axis."
  @type piece ::
          {src :: binary(), src_shape :: tuple(), src_start :: tuple(), dst_start :: tuple(),
           count :: tuple()}

  @typedoc """
  The start of one side of a piece along each axis: an integer (the box runs from there), or
  an index list (a binary of `count` little-endian uint64 positions along that axis, in any
  order, repeats allowed): the pieces of orthogonal and point selections.
  """
  @type start :: tuple()

  @doc """
  Builds a new binary of `dst_shape` elements in one pass: starts from `base` (a binary of
  exactly the destination size, copied, or `{:fill, element}` to repeat one element's bytes)
  and copies every piece into it, in order (a position written twice keeps the last value).
  A piece's `src_start` and `dst_start` may hold index lists (`t:start/0`): it then gathers
  from, or scatters to, those positions.

  Used to assemble a read region from decoded chunks, to extract a region of a binary, to
  merge new data into an existing chunk, and to reorder selected elements.

      {:ok, <<3, 1, 3>>} = ExZarr.Native.copy_regions({3}, 1, {:fill, <<0>>},
        [{<<1, 2, 3>>, {3}, {<<2::64-little, 0::64-little, 2::64-little>>}, {0}, {3}}])
  """
  @spec copy_regions(tuple(), pos_integer(), binary() | {:fill, binary()}, [piece()]) ::
          {:ok, binary()} | {:error, term()}
  def copy_regions(_dst_shape, _itemsize, _base, _pieces), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Permutes axes: the result has shape `shape[perm[k]]` along axis k (numpy `transpose(perm)`)."
  @spec transpose(binary(), tuple(), pos_integer(), tuple()) :: {:ok, binary()} | {:error, term()}
  def transpose(_data, _shape, _itemsize, _perm), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Reverses the byte order of every `itemsize`-byte element."
  @spec byteswap(binary(), pos_integer()) :: {:ok, binary()} | {:error, term()}
  def byteswap(_data, _itemsize), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Sub-byte elements (one per byte, in the low `bits` bits, 1..7) from their in-memory form
  (sign-extended when `signed`, else with the upper bits zero) to their stored form (upper
  bits zero). An element not in memory form (a value out of the type's range) is an error.
  Data already in stored form is returned as is.

      iex> ExZarr.Native.subbyte_encode(<<1, 0xFF, 0xF8>>, 4, true)
      {:ok, <<1, 0x0F, 0x08>>}
  """
  @spec subbyte_encode(binary(), 1..7, boolean()) :: {:ok, binary()} | {:error, term()}
  def subbyte_encode(_data, _bits, _signed), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Stored sub-byte elements to their in-memory form: the low `bits` bits of each byte,
  sign-extended when `signed`; the upper bits are ignored. Data already in memory form is
  returned as is.

      iex> ExZarr.Native.subbyte_decode(<<1, 0x0F, 0xF8>>, 4, true)
      {:ok, <<1, 0xFF, 0xF8>>}
  """
  @spec subbyte_decode(binary(), 1..7, boolean()) :: {:ok, binary()} | {:error, term()}
  def subbyte_decode(_data, _bits, _signed), do: :erlang.nif_error(:nif_not_loaded)

  @doc "True when every `byte_size(element)`-byte element of `data` equals `element` bitwise."
  @spec all_equal(binary(), binary()) :: boolean()
  def all_equal(_data, _element), do: :erlang.nif_error(:nif_not_loaded)

  @doc "True when every element is a NaN of the given float width (2, 4 or 8 bytes)."
  @spec all_nan(binary(), 2 | 4 | 8) :: boolean()
  def all_nan(_data, _float_size), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  The C-order linear indices of `points` (a list of tuples of integers, negative from the end)
  in an array of `shape`, as a binary of little-endian uint64; `{:error, j}` for the first
  point `j` that is not a tuple of `tuple_size(shape)` integers within the shape (`{:error,
  {kind, message}}` when `points` is not a proper list or the shape has over 2^64 elements).

      {:ok, <<7::64-little, 0::64-little>>} = ExZarr.Native.linear_points([{1, -1}, {0, 0}], {2, 4})
      {:error, 1} = ExZarr.Native.linear_points([{1, 1}, {2, 0}], {2, 4})
  """
  @spec linear_points(list(), tuple()) ::
          {:ok, binary()} | {:error, non_neg_integer() | {atom(), term()}}
  def linear_points(_points, _shape), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  The positions of the non-zero bytes of `mask`, in order, as a binary of little-endian uint64.

      {:ok, <<1::64-little, 2::64-little>>} = ExZarr.Native.mask_points(<<0, 1, 7, 0>>)
  """
  @spec mask_points(binary()) :: {:ok, binary()} | {:error, term()}
  def mask_points(_mask), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Groups points (a binary of little-endian uint64 C-order linear indices into an array of
  `shape`) by the chunk of the grid `hd(levels)` that holds them, and within a chunk by the
  inner chunk of each further level (each dividing the one before: the inner chunks of a
  shard); stable otherwise. Returns `{groups, local, order}`: `groups` the runs of one chunk
  as `{chunk_linear_index, count}` in order, `local` each grouped point's C-order linear index
  within its chunk, `order` each grouped point's position among the points (both binaries of
  little-endian uint64), or `nil` when that is the identity.

      points = <<3::64-little, 0::64-little>>
      {:ok, {[{0, 1}, {1, 1}], <<0::64-little, 1::64-little>>, <<1::64-little, 0::64-little>>}} =
        ExZarr.Native.group_points(points, {4}, [{2}])
  """
  @spec group_points(binary(), tuple(), [tuple()]) ::
          {:ok, {[{non_neg_integer(), pos_integer()}], binary(), binary() | nil}}
          | {:error, term()}
  def group_points(_points, _shape, _levels), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  The items of a vlen layout (`ExZarr.Codecs.VlenLayout`: a u32 little-endian count, then
  each item's u32 little-endian length and bytes) as a tuple of sub-binaries of `layout`:
  exactly `expected` items and nothing after them, else `{:error, :malformed_layout}`; with
  `utf8?`, every item UTF-8, else `{:error, {:invalid_utf8, item}}` for the first that is not.

      iex> ExZarr.Native.vlen_split(<<2::little-32, 1::little-32, "a", 0::little-32>>, 2, true)
      {:ok, {"a", ""}}
      iex> ExZarr.Native.vlen_split(<<2::little-32, 1::little-32, "a">>, 2, false)
      {:error, :malformed_layout}
      iex> ExZarr.Native.vlen_split(<<1::little-32, 1::little-32, 0xFF>>, 1, true)
      {:error, {:invalid_utf8, <<0xFF>>}}
  """
  @spec vlen_split(binary(), non_neg_integer(), boolean()) ::
          {:ok, tuple()} | {:error, :malformed_layout | {:invalid_utf8, binary()}}
  def vlen_split(_layout, _expected, _utf8?), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Checks a vlen layout as `vlen_split/3` does, without splitting it: `:ok`, or the error
  `vlen_split/3` would give. (A process that decodes a chunk for another checks it so and
  sends the binary, passed by reference, where a tuple of sub-binaries is copied item by item.)

      iex> ExZarr.Native.vlen_check_layout(<<1::little-32, 1::little-32, "a">>, 1, true)
      :ok
      iex> ExZarr.Native.vlen_check_layout(<<1::little-32, 1::little-32, 0xFF>>, 1, true)
      {:error, {:invalid_utf8, <<0xFF>>}}
  """
  @spec vlen_check_layout(binary(), non_neg_integer(), boolean()) ::
          :ok | {:error, :malformed_layout | {:invalid_utf8, binary()}}
  def vlen_check_layout(_layout, _expected, _utf8?), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  The items of an array of `shape` in C order, as a list built in one call: each piece
  `{source, source_shape, source_start, start, count}` puts the box `source_start`/`count` of
  its source (a tuple of items in C order, or `{:layout, binary}`, the vlen layout of the
  items: see `vlen_split/3`) at `start`; `fill` is every item no piece puts.
  `{:error, :malformed_layout}` when a layout does not hold its source shape's items.

      iex> layout = <<2::little-32, 1::little-32, "a", 1::little-32, "b">>
      iex> ExZarr.Native.vlen_assemble({4}, "", [{{:layout, layout}, {2}, {0}, {1}, {2}}, {{"z"}, {1}, {0}, {3}, {1}}])
      {:ok, ["", "a", "b", "z"]}
  """
  @spec vlen_assemble(tuple(), binary(), [{tuple(), tuple(), tuple(), tuple(), tuple()}]) ::
          {:ok, [binary()]} | {:error, :malformed_layout}
  def vlen_assemble(_shape, _fill, _pieces), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  `:ok` when `items` (a list or a tuple) holds `expected` binaries, each shorter than 4 GiB
  and, with `utf8?`, UTF-8; else `{:error, {:invalid_item, index}}` for the first bad one,
  `{:error, :wrong_item_count}` or `{:error, :not_a_list}` (an improper list).

      iex> ExZarr.Native.vlen_check(["a", "é"], 2, true)
      :ok
      iex> ExZarr.Native.vlen_check({"a", <<0xFF>>}, 2, true)
      {:error, {:invalid_item, 1}}
      iex> ExZarr.Native.vlen_check(["a"], 2, false)
      {:error, :wrong_item_count}
  """
  @spec vlen_check([binary()] | tuple(), non_neg_integer(), boolean()) ::
          :ok | {:error, {:invalid_item, non_neg_integer()} | :wrong_item_count | :not_a_list}
  def vlen_check(_items, _expected, _utf8?), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  The vlen layout of `items` (see `vlen_split/3`) as one binary, when `vlen_check/3` finds
  them good; else its error.

      iex> ExZarr.Native.vlen_join(["a", ""], 2, true)
      {:ok, <<2::little-32, 1::little-32, "a", 0::little-32>>}
  """
  @spec vlen_join([binary()] | tuple(), non_neg_integer(), boolean()) ::
          {:ok, binary()}
          | {:error, {:invalid_item, non_neg_integer()} | :wrong_item_count | :not_a_list}
  def vlen_join(_items, _expected, _utf8?), do: :erlang.nif_error(:nif_not_loaded)

  @doc "CRC32C (Castagnoli) of iodata, hardware-accelerated where the CPU has SSE4.2."
  @spec crc32c(iodata()) :: non_neg_integer()
  def crc32c(_data), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  zfp stream with a full header, as numcodecs' ZFPY codec writes it: `type` is zfp's (1 int32,
  2 int64, 3 float32, 4 float64), `shape` the C-order shape (1 to 4 axes) of the packed
  native-order array `data`; `mode` 2 (fixed rate), 3 (fixed precision) or 4 (fixed accuracy)
  with `param` its rate, precision or tolerance, reversible (lossless) when `param` is negative.
  """
  @spec zfp_encode(binary(), 1..4, tuple(), 2..4, float()) :: {:ok, binary()} | {:error, term()}
  def zfp_encode(_data, _type, _shape, _mode, _param), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Decodes a zfp stream whose header must describe exactly `type` and `shape` (see
  `zfp_encode/5`) into the packed array.
  """
  @spec zfp_decode(binary(), 1..4, tuple()) :: {:ok, binary()} | {:error, term()}
  def zfp_decode(_data, _type, _shape), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  pcodec's standalone format, as numcodecs' PCodec writes it: `dtype` 1..9 is u16, u32, u64,
  i16, i32, i64, f16, f32, f64; `config` is `{level 0..12, mode (0 auto, 1 classic), delta
  (0 auto, 1 none, 2 try_consecutive, 3 try_lookback), delta order 0..7, page size}`.
  `{:error, {:pcodec, _}}` when ExZarr was built without it (no cargo).
  """
  @spec pco_compress(binary(), 1..9, tuple()) :: {:ok, binary()} | {:error, term()}
  def pco_compress(_data, _dtype, _config), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Decodes pcodec data holding exactly `size` bytes of numbers of `dtype`."
  @spec pco_decompress(binary(), 1..9, non_neg_integer()) :: {:ok, binary()} | {:error, term()}
  def pco_decompress(_data, _dtype, _size), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Bytes of working memory pcodec keeps from its calls for the next ones (given back once
  unused for 5 seconds, as the pool of `bufpool_info/0`); 0 without pcodec.

      iex> is_integer(ExZarr.Native.pco_kept_bytes())
      true
  """
  @spec pco_kept_bytes() :: non_neg_integer()
  def pco_kept_bytes, do: :erlang.nif_error(:nif_not_loaded)

  @typedoc "A checksum of the checksum codecs (`ExZarr.Codecs.Checksum32`)."
  @type checksum :: :crc32c | :crc32 | :adler32 | :fletcher32 | :jenkins_lookup3

  @doc """
  A 32-bit checksum of iodata: `:crc32` and `:adler32` as zlib's, `:crc32c`, `:fletcher32`
  (HDF5's, on big-endian 16-bit words) and `:jenkins_lookup3` (Bob Jenkins' hashlittle, seeded
  with `init`; the others ignore it), as numcodecs computes them.

      iex> ExZarr.Native.checksum(:crc32, "123456789", 0)
      0xCBF43926
  """
  @spec checksum(checksum(), iodata(), non_neg_integer()) :: non_neg_integer()
  def checksum(_kind, _data, _init), do: :erlang.nif_error(:nif_not_loaded)
  # ---- Compressors ----
  #
  # Every decoder takes `max_size` and `exact`: the output is never larger than `max_size`,
  # and when `exact` is true `max_size` is the expected decoded size (allocated up front and
  # required). Inputs are iodata (a binary is used without a copy); compressors also take a
  # box of a larger array (`t:encoder_input/0`).

  @typedoc "Result of a compressor call."
  @type codec_result :: {:ok, binary()} | {:error, {atom(), String.t()}}

  @typedoc """
  What a compressor reads: iodata, or `{:gather, data, shape, start, count, itemsize}`, the
  box `start`/`count` of the C-order array of `shape` (`itemsize`-byte elements) that `data`
  holds, which the compressor gathers itself in the same call (a malformed box is an
  `ArgumentError`).
  """
  @type encoder_input ::
          iodata()
          | {:gather, binary(), shape :: tuple(), start :: tuple(), count :: tuple(),
             pos_integer()}

  @doc """
  The bytes a compressor reads from `input`.

      iex> box = {:gather, <<1, 2, 3, 4, 5, 6>>, {2, 3}, {0, 1}, {2, 2}, 1}
      iex> ExZarr.Native.encoder_input_size(box)
      4
      iex> {:ok, frame} = ExZarr.Native.zstd_compress(box, 1, false)
      iex> ExZarr.Native.zstd_decompress(frame, 4, true)
      {:ok, <<2, 3, 5, 6>>}
  """
  @spec encoder_input_size(encoder_input()) :: non_neg_integer()
  def encoder_input_size({:gather, _data, _shape, _start, count, itemsize}),
    do: ExZarr.Shape.product(count) * itemsize

  def encoder_input_size(iodata), do: IO.iodata_length(iodata)

  @doc """
  zstd frame with the content size always stored; `checksum` adds the frame checksum. With
  `workers` from 1 to 256, that many zstd threads compress 4 MiB jobs of the data in
  parallel: the frame is the same for any number of workers (0, the default, compresses on
  the calling thread: another frame).

      {:ok, frame} = ExZarr.Native.zstd_compress("hello", 3, false)
      {:ok, "hello"} = ExZarr.Native.zstd_decompress(frame, 5, true)
  """
  @spec zstd_compress(encoder_input(), integer(), boolean(), non_neg_integer()) :: codec_result()
  def zstd_compress(_data, _level, _checksum, _workers \\ 0),
    do: :erlang.nif_error(:nif_not_loaded)

  @doc "Decodes zstd frames, with or without a stored content size."
  @spec zstd_decompress(iodata(), non_neg_integer(), boolean()) :: codec_result()
  def zstd_decompress(_data, _max_size, _exact), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Blosc 1.x buffer. `cname` is a Blosc compressor name (`"lz4"`, `"zstd"`, ...), `shuffle`
  0 (none), 1 (byte) or 2 (bit), `blocksize` 0 for automatic.
  """
  @spec blosc_compress(encoder_input(), String.t(), 0..9, 0..2, pos_integer(), non_neg_integer()) ::
          codec_result()
  def blosc_compress(_data, _cname, _clevel, _shuffle, _typesize, _blocksize),
    do: :erlang.nif_error(:nif_not_loaded)

  @doc "Decodes a Blosc 1.x buffer after validating its header against the input size."
  @spec blosc_decompress(iodata(), non_neg_integer(), boolean()) :: codec_result()
  def blosc_decompress(_data, _max_size, _exact), do: :erlang.nif_error(:nif_not_loaded)

  @doc "numcodecs LZ4 framing: u32 little-endian decoded length, then one raw LZ4 block."
  @spec lz4_compress(encoder_input(), pos_integer()) :: codec_result()
  def lz4_compress(_data, _acceleration), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Decodes the numcodecs LZ4 framing."
  @spec lz4_decompress(iodata(), non_neg_integer(), boolean()) :: codec_result()
  def lz4_decompress(_data, _max_size, _exact), do: :erlang.nif_error(:nif_not_loaded)

  @doc "One bzip2 stream with block size `level` (1..9)."
  @spec bz2_compress(encoder_input(), 1..9) :: codec_result()
  def bz2_compress(_data, _level), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Decodes concatenated bzip2 streams."
  @spec bz2_decompress(iodata(), non_neg_integer(), boolean()) :: codec_result()
  def bz2_decompress(_data, _max_size, _exact), do: :erlang.nif_error(:nif_not_loaded)

  @typedoc """
  An LZMA filter: `{id, preset, dict_size, lc, lp, pb, mode, nice_len, mf, depth, dist,
  start_offset}` with -1 for options not given (Python `lzma` filter specs).
  """
  @type lzma_filter ::
          {non_neg_integer(), integer(), integer(), integer(), integer(), integer(), integer(),
           integer(), integer(), integer(), integer(), integer()}

  @doc """
  LZMA/XZ as Python's `lzma.compress`: `format` 1 (xz), 2 (alone) or 3 (raw), `check` -1 for
  the default, `preset` -1 for the default (6), `filters` [] for none.
  """
  @spec lzma_compress(encoder_input(), 1..3, integer(), integer(), [lzma_filter()]) ::
          codec_result()
  def lzma_compress(_data, _format, _check, _preset, _filters),
    do: :erlang.nif_error(:nif_not_loaded)

  @doc "Decodes LZMA/XZ data of `format` 0 (auto), 1 (xz), 2 (alone) or 3 (raw, needs filters)."
  @spec lzma_decompress(iodata(), non_neg_integer(), boolean(), 0..3, [lzma_filter()]) ::
          codec_result()
  def lzma_decompress(_data, _max_size, _exact, _format, _filters),
    do: :erlang.nif_error(:nif_not_loaded)

  @doc "One RFC 1952 gzip member (libdeflate, `level` 0..12)."
  @spec gzip_compress(encoder_input(), 0..12) :: codec_result()
  def gzip_compress(_data, _level), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Decodes concatenated gzip members."
  @spec gzip_decompress(iodata(), non_neg_integer(), boolean()) :: codec_result()
  def gzip_decompress(_data, _max_size, _exact), do: :erlang.nif_error(:nif_not_loaded)

  @doc "One RFC 1950 zlib stream (libdeflate, `level` 0..12)."
  @spec zlib_compress(encoder_input(), 0..12) :: codec_result()
  def zlib_compress(_data, _level), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Decodes one zlib stream."
  @spec zlib_decompress(iodata(), non_neg_integer(), boolean()) :: codec_result()
  def zlib_decompress(_data, _max_size, _exact), do: :erlang.nif_error(:nif_not_loaded)
  # ---- Filter kernels (numcodecs semantics, numpy casting) ----
  #
  # Types are numeric dtype atoms (`:bool`, `:int8` .. `:uint64`, `:float16` .. `:float64`);
  # data is packed little-endian elements.

  @typedoc "A numeric element type of the filter kernels."
  @type num_type :: ExZarr.DType.real()

  @doc """
  numpy `astype` from `from` to `to` (floats to integers truncate, integers wrap).

      {:ok, <<1, 0, 2, 0>>} = ExZarr.Native.cast(<<1.5::float-32-little, 2.0::float-32-little>>, :float32, :int16)
  """
  @spec cast(binary(), num_type(), num_type()) :: {:ok, binary()} | {:error, term()}
  def cast(_data, _from, _to), do: :erlang.nif_error(:nif_not_loaded)

  @doc "numcodecs Delta encode: differences of `dtype` elements, stored as `astype`."
  @spec delta_encode(binary(), num_type(), num_type()) :: {:ok, binary()} | {:error, term()}
  def delta_encode(_data, _dtype, _astype), do: :erlang.nif_error(:nif_not_loaded)

  @doc "numcodecs Delta decode: cumulative sum of `astype` elements in `dtype`."
  @spec delta_decode(binary(), num_type(), num_type()) :: {:ok, binary()} | {:error, term()}
  def delta_decode(_data, _astype, _dtype), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  numcodecs FixedScaleOffset encode: `round((x - offset) * scale)` as `astype` (half to even);
  `int_math` when `dtype` is an integer type and offset and scale are integers.
  """
  @spec fso_encode(binary(), num_type(), num_type(), number(), number(), boolean()) ::
          {:ok, binary()} | {:error, term()}
  def fso_encode(_data, _dtype, _astype, _offset, _scale, _int_math),
    do: :erlang.nif_error(:nif_not_loaded)

  @doc "numcodecs FixedScaleOffset decode: `x / scale + offset` as `dtype`."
  @spec fso_decode(binary(), num_type(), num_type(), number(), number()) ::
          {:ok, binary()} | {:error, term()}
  def fso_decode(_data, _astype, _dtype, _offset, _scale), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  zarr-extensions scale_offset in `dtype` (not bool): encodes `(x - offset) * scale`, or
  decodes `x / scale + offset` when `decode` is true; `offset` and `scale` are elements of
  `dtype` (`ExZarr.DType.fill_element/2`). Floats compute with the type's rounding; integers
  exactly, and a result out of the type's range, a decoded element that is not a multiple of
  `scale` or a zero `scale` is an error.
  """
  @spec scale_offset(binary(), num_type(), binary(), binary(), boolean()) ::
          {:ok, binary()} | {:error, term()}
  def scale_offset(_data, _dtype, _offset, _scale, _decode),
    do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  zarr-extensions cast_value: casts the elements of `data` from `from` to `to` by value (not
  bool). `rounding` 0..4 is nearest-even, towards-zero, towards-positive, towards-negative,
  nearest-away; `out_of_range` 0..2 is error, clamp, wrap. `keys` (elements of `from`) and
  `values` (as many of `to`) are the scalar map. An element out of range (with error), or NaN
  or infinite for an integer type, is `{:error, {:cast_value, message}}` naming its index.
  """
  @spec cast_value(binary(), num_type(), num_type(), 0..4, 0..2, binary(), binary()) ::
          {:ok, binary()} | {:error, term()}
  def cast_value(_data, _from, _to, _rounding, _out_of_range, _keys, _values),
    do: :erlang.nif_error(:nif_not_loaded)

  @doc "numcodecs Quantize encode: `round(x * scale) / scale` in `dtype`, stored as `astype`."
  @spec quantize(binary(), num_type(), num_type(), float()) :: {:ok, binary()} | {:error, term()}
  def quantize(_data, _dtype, _astype, _scale), do: :erlang.nif_error(:nif_not_loaded)

  @doc "numcodecs BitRound: keeps `keepbits` mantissa bits of `width`-byte floats."
  @spec bitround(binary(), 2 | 4 | 8, non_neg_integer()) :: {:ok, binary()} | {:error, term()}
  def bitround(_data, _width, _keepbits), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Byte shuffle of `elementsize`-byte elements (numcodecs Shuffle)."
  @spec shuffle(binary(), non_neg_integer()) :: {:ok, binary()} | {:error, term()}
  def shuffle(_data, _elementsize), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Inverse of `shuffle/2`."
  @spec unshuffle(binary(), non_neg_integer()) :: {:ok, binary()} | {:error, term()}
  def unshuffle(_data, _elementsize), do: :erlang.nif_error(:nif_not_loaded)

  @doc "numcodecs PackBits: a padding-count byte, then the booleans packed MSB first."
  @spec packbits(binary()) :: {:ok, binary()} | {:error, term()}
  def packbits(_data), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Unpacks `n` booleans (bytes 0/1) from `packbits/1` output."
  @spec unpackbits(binary(), non_neg_integer()) :: {:ok, binary()} | {:error, term()}
  def unpackbits(_data, _n), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Reads the file `key` (segments separated by `/`) below the directory `root` in one call on a
  dirty I/O scheduler: opens it, reads `range` (`nil` for all, `{offset, length}` or
  `{:suffix, n}`, clamped to the file as `ExZarr.Storage.Range.resolve/2` does) into an
  exact-size binary and closes it. Given a list of ranges, returns a list of binaries.
  With `nofollow` true, no segment may be a symlink: `{:error, :symlink}` when one is.
  Other errors are POSIX reasons (`{:error, :enoent}`).
  """
  @spec read_file(binary(), binary(), range | [range], boolean()) ::
          {:ok, binary() | [binary()]} | {:error, atom()}
        when range: ExZarr.Storage.range()
  def read_file(_root, _key, _range, _nofollow), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  `read_file/4`, and with `generation` true also the file's generation, taken with `fstat`
  (and the inode generation ioctl) on the descriptor the bytes were read from:
  `{:ok, data, {size, mtime_ns, ctime_ns, inode, device, inode_generation}}`. When the file
  changed while it was read (written in place by another program) the generation is a new
  reference instead, equal to no other generation.
  """
  @spec read_file(binary(), binary(), range | [range], boolean(), boolean()) ::
          {:ok, binary() | [binary()]} | {:ok, binary() | [binary()], tuple()} | {:error, atom()}
        when range: ExZarr.Storage.range()
  def read_file(_root, _key, _range, _nofollow, _generation),
    do: :erlang.nif_error(:nif_not_loaded)

  # ---- File writes ----

  @doc """
  Writes `data` (a binary, or a flat list of binaries as `:erlang.iolist_to_iovec/1` makes)
  to the file `key` below the directory `root` (an absolute path) in one call on a dirty I/O
  scheduler: creates the missing directories (the root too), writes a temporary file
  `.<name>.tmp.<16 hex digits>` next to the target with one vectored write (then `fsync` when
  `fsync` is true) and renames it over the target, so that readers see the old value or the
  new one, never a torn one; a failed write removes the temporary file. The rename is done
  holding a `flock` on the target's directory when the filesystem has one (see
  `write_file/6`).

  With `nofollow` true, no segment of the key may be a symlink (`{:error, :symlink}` when one
  is; the caller checks where it leads). Other errors are POSIX reasons (`{:error, :eisdir}`);
  data that is not a binary or a list of binaries raises `ArgumentError`.

      :ok = ExZarr.Native.write_file("/tmp/example.zarr", "c/0/0", ["ab", "c"], true, false)
  """
  @spec write_file(binary(), binary(), binary() | [binary()], boolean(), boolean()) ::
          :ok | {:error, atom()}
  def write_file(_root, _key, _data, _nofollow, _fsync), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  `write_file/5` on a condition, returning the new file's generation (as `read_file/5` gives
  it): `condition` is `:any` (none), `:absent` (the target must not exist) or a generation
  the target must still have. The target's directory is locked (`flock`) while the condition
  is checked and the file renamed, as every write through `write_file` does, so the check and
  the rename are one step for all writers of that directory on the machine.
  `{:error, :generation_mismatch}` when the condition does not hold (nothing is changed),
  `{:error, :nolock}` when the directory cannot be locked (a filesystem without `flock`).
  """
  @spec write_file(binary(), binary(), binary() | [binary()], boolean(), boolean(), term()) ::
          {:ok, tuple()} | {:error, atom()}
  def write_file(_root, _key, _data, _nofollow, _fsync, _condition),
    do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Deletes the file `key` below the directory `root` only while it has `generation` (as
  `read_file/5` gives it), checked holding the `flock` on its directory that every
  `write_file` takes to rename: the check and the unlink are one step for all writers of that
  directory on the machine. `:ok`; `{:error, :generation_mismatch}` when the file is another
  one or missing (nothing is deleted); `{:error, :nolock}` on a filesystem without `flock`;
  `{:error, :symlink}` as `write_file/5`; a malformed generation raises `ArgumentError`.
  """
  @spec delete_file(binary(), binary(), boolean(), tuple()) :: :ok | {:error, atom()}
  def delete_file(_root, _key, _nofollow, _generation), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Takes an exclusive lock on the file at `path` (an absolute path; created if missing)
  without waiting: `{:ok, lock}`, or `{:error, :locked}` when another holder (in this or any
  other OS process on the machine) has it. The lock is released by `unlock_file/1`, which also
  removes the file, or when `lock` is garbage collected (its holder died), which leaves the
  file for the next holder.
  """
  @spec lock_file(binary()) :: {:ok, reference()} | {:error, atom()}
  def lock_file(_path), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Releases a lock taken by `lock_file/1` and removes its file (again is a no-op)."
  @spec unlock_file(reference()) :: :ok
  def unlock_file(_lock), do: :erlang.nif_error(:nif_not_loaded)

  # ---- Output buffer of multi-chunk reads (c_src/outbuf.c) ----
  #
  # A read that spans several chunks allocates one buffer of the output's size; the tasks
  # decoding the chunks write their boxes into it in parallel; `outbuf_finish/1` turns it into
  # the result binary without a copy once the boxes cover the output exactly once.

  @typedoc "An output buffer being filled (a NIF resource)."
  @opaque outbuf :: reference()

  @typedoc """
  How `outbuf_put/4` gets a chunk's elements from its data: `:raw` (the data is the decoded
  chunk), or the compressor the data is in (decoded to exactly the chunk's size, as the
  `*_decompress` functions with `exact` do); `{codec, n}` then reverses the byte order of
  every `n`-byte unit (a big-endian `bytes` codec; `n` is 1, 2, 4 or 8 and divides the
  itemsize).
  """
  @type outbuf_codec ::
          :raw | :zstd | :blosc | :lz4 | :gzip | :zlib | :bz2 | {atom(), 1 | 2 | 4 | 8}

  @typedoc """
  A chunk's box: the chunk's shape, where the box starts in the chunk (integers, or index
  lists as `t:start/0`: the elements an orthogonal or point selection takes from the chunk)
  and in the output, and its element count along each axis.
  """
  @type outbuf_box ::
          {src_shape :: tuple(), src_start :: tuple(), dst_start :: tuple(), count :: tuple()}

  @doc """
  A new output buffer of `shape` elements of `itemsize` bytes, uninitialised: every element
  must be written once by `outbuf_put/4` or `outbuf_fill/3` before `outbuf_finish/1`.

      {:ok, buf} = ExZarr.Native.outbuf_new({2, 2}, 1)
      :ok = ExZarr.Native.outbuf_put(buf, <<1, 2, 3, 4>>, :raw, {{2, 2}, {0, 0}, {0, 0}, {1, 2}})
      :ok = ExZarr.Native.outbuf_fill(buf, <<9>>, {{1, 0}, {1, 2}})
      {:ok, <<1, 2, 9, 9>>} = ExZarr.Native.outbuf_finish(buf)
  """
  @spec outbuf_new(tuple(), pos_integer()) :: {:ok, outbuf()} | {:error, term()}
  def outbuf_new(_shape, _itemsize), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Writes the box of one chunk into the buffer: decodes `data` with `codec` (straight into the
  buffer when the whole chunk is one run of the output, else into a per-thread scratch buffer)
  and copies the box. Safe to call from many processes at once for disjoint boxes.
  `{:error, {codec, message}}` for data that does not decode to the chunk's size.
  """
  @spec outbuf_put(outbuf(), binary(), outbuf_codec(), outbuf_box()) :: :ok | {:error, term()}
  def outbuf_put(_buf, _data, _codec, _box), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  Writes the boxes of many chunks of `chunk_shape` into the buffer in one call (the inner
  chunks of a shard): each chunk (a `t:batch_chunk/0` whose `dst_start` is in the buffer) is
  decoded with `codec` on up to `threads` threads straight into the buffer, a chunk without
  stored bytes gets `fill` (one element). No decoded chunk becomes a binary of its own. The
  boxes count as written only when every chunk decoded: after `{:error, {:corrupt_chunk, _}}`
  the same boxes may be written again.

      {:ok, buf} = ExZarr.Native.outbuf_new({4}, 1)
      :ok = ExZarr.Native.outbuf_put_batch(buf, <<0>>, :raw, {2}, [{<<1, 2>>, {0}, {0}, {2}}, {nil, {0}, {2}, {2}}], 1)
      {:ok, <<1, 2, 0, 0>>} = ExZarr.Native.outbuf_finish(buf)
  """
  @spec outbuf_put_batch(
          outbuf(),
          binary(),
          batch_codec(),
          tuple(),
          [batch_chunk()],
          pos_integer()
        ) ::
          :ok | {:error, term()}
  def outbuf_put_batch(_buf, _fill, _codec, _chunk_shape, _chunks, _threads),
    do: :erlang.nif_error(:nif_not_loaded)

  @doc "Writes `element` (itemsize bytes) into every element of the box `{dst_start, count}`."
  @spec outbuf_fill(outbuf(), binary(), {tuple(), tuple()}) :: :ok | {:error, term()}
  def outbuf_fill(_buf, _element, _box), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  The buffer's contents as a binary (no copy), when the boxes written cover every element
  exactly once (disjoint boxes; beyond 256 boxes they must form a grid, as the parts of
  `ExZarr.Indexing.plan/2` do); `{:error, {:outbuf, _}}` otherwise. The buffer takes no
  writes afterwards.
  """
  @spec outbuf_finish(outbuf()) :: {:ok, binary()} | {:error, term()}
  def outbuf_finish(_buf), do: :erlang.nif_error(:nif_not_loaded)

  @doc """
  `{buffers, bytes}` that the pool of large outputs holds (`c_src/bufpool.c`): the memory of
  a read output, a gathered chunk or a codec's output of 128 KiB or more goes back there when
  its result is freed, for the next output to reuse without page faults; at most 256 buffers
  and 256 MiB, each freed after 5 seconds unused.
  """
  @spec bufpool_info() :: {non_neg_integer(), non_neg_integer()}
  def bufpool_info, do: :erlang.nif_error(:nif_not_loaded)

  # ---- Batch decoding (sharded reads) ----

  @typedoc "A bounded decoder of `decode_into/7`: `:raw` for chunks stored as their elements."
  @type batch_codec :: :raw | :blosc | :zstd | :lz4 | :gzip | :zlib | :bz2

  @typedoc """
  A chunk of `decode_into/7`: its stored bytes (`nil` when not stored: its box gets the fill
  element), where its box starts in the chunk and in the destination, and the box's size.
  """
  @type batch_chunk ::
          {stored :: binary() | nil, src_start :: tuple(), dst_start :: tuple(), count :: tuple()}

  @doc """
  Builds a new binary of `dst_shape` elements from many chunks of `chunk_shape` in one call:
  each chunk is decoded with `codec` (its decoded size must be exactly the chunk's) into a
  per-thread scratch buffer and its box copied into place, on up to `threads` threads; bytes
  no box covers get `fill` (one element). No decoded chunk becomes a binary of its own.
  A chunk that fails to decode gives `{:error, {:corrupt_chunk, message}}` naming it by its
  position in the list.

      chunks = [{<<1, 2>>, {0}, {0}, {2}}, {nil, {0}, {2}, {2}}]
      {:ok, <<1, 2, 0, 0>>} = ExZarr.Native.decode_into({4}, 1, <<0>>, :raw, {2}, chunks, 1)
  """
  @spec decode_into(
          tuple(),
          pos_integer(),
          binary(),
          batch_codec(),
          tuple(),
          [batch_chunk()],
          pos_integer()
        ) :: {:ok, binary()} | {:error, term()}
  def decode_into(_dst_shape, _itemsize, _fill, _codec, _chunk_shape, _chunks, _threads),
    do: :erlang.nif_error(:nif_not_loaded)
end
