defmodule ExZarr.Codecs.ShardingIndexed do
  @moduledoc """
  The v3 `sharding_indexed` codec (array->bytes): one stored object (a shard) holds a grid of
  inner chunks, each encoded with its own codec pipeline, plus an index saying where each one is.

  Configuration (as in `zarr.json`):

    * `chunk_shape`: the inner chunk shape; it divides the shard shape
    * `codecs`: the inner chunks' pipeline (may itself end in `sharding_indexed`: nested sharding)
    * `index_codecs`: the index's pipeline; it must have a fixed encoded size (default
      `bytes` little-endian + `crc32c`, as zarr-python writes)
    * `index_location`: `"end"` (default) or `"start"`

  The index is a `uint64` array of shape `chunks_per_shard ++ {2}` in C order: an
  `(offset, nbytes)` pair per inner chunk, offsets absolute within the shard, `2^64-1` twice for
  an inner chunk that is not stored. Inner chunks whose elements all equal the fill value (NaN
  matching NaN) are not stored. Inner chunks are laid out in Morton order, like zarr-python, so
  the index is byte-identical to the one zarr-python writes for the same encoded chunks.

  `encode/2` and `decode/2` work on whole shards (they are what `ExZarr.Array.read_chunk/3`
  and nested sharding use) and run the inner chunks in parallel. Partial reads and writes of
  shards are in `ExZarr.Sharding`, which uses the index functions of this module.

      spec = %{shape: {4, 4}, dtype: :uint8, fill_value: 0, decoded_size: nil}
      config = %{"chunk_shape" => [2, 2], "codecs" => [%{"name" => "bytes"}],
                 "index_codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}]}
      {:ok, s} = ExZarr.Codecs.ShardingIndexed.init(config, spec)
      {:ok, shard} = ExZarr.Codecs.ShardingIndexed.encode(:binary.copy(<<1>>, 16), s)
      {:ok, data} = ExZarr.Codecs.ShardingIndexed.decode(IO.iodata_to_binary(shard), s)
  """
  @behaviour ExZarr.Codec

  alias ExZarr.{Array, DType, Indexing, Limits, Native, Parallel, Result, Shape}
  alias ExZarr.Codec.Pipeline
  alias ExZarr.Metadata.V3

  @empty 0xFFFFFFFFFFFFFFFF
  @empty_entry <<@empty::64-little, @empty::64-little>>

  @enforce_keys [:chunk_shape, :shard_shape, :grid, :count, :inner, :index]
  defstruct [
    :chunk_shape,
    :shard_shape,
    :grid,
    :count,
    :inner,
    :index,
    :index_size,
    :location,
    :config,
    :dtype,
    :fill_value,
    :fill_element,
    :morton
  ]

  @type t :: %__MODULE__{
          chunk_shape: tuple(),
          shard_shape: tuple(),
          grid: tuple(),
          count: pos_integer(),
          inner: Pipeline.t(),
          index: Pipeline.t(),
          index_size: pos_integer(),
          location: :start | :end,
          config: map(),
          dtype: DType.t(),
          fill_value: term(),
          fill_element: binary(),
          morton: binary()
        }

  @typedoc "A decoded index: `16 * count` bytes of little-endian `(offset, nbytes)` pairs in C order."
  @type index :: binary()

  @impl true
  def name, do: "sharding_indexed"

  @impl true
  def kind, do: :array_to_bytes

  @doc """
  The configuration `ExZarr.create(shards: ...)` writes, as zarr-python's `create_array`:
  inner `chunk_shape` and `codecs`, index `bytes` little-endian + `crc32c` at the end.

      iex> ExZarr.Codecs.ShardingIndexed.default_configuration({2}, [%{name: "bytes", configuration: %{}}])
      %{"chunk_shape" => [2], "codecs" => [%{"name" => "bytes"}],
        "index_codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}},
                           %{"name" => "crc32c"}],
        "index_location" => "end"}
  """
  @spec default_configuration(tuple(), [ExZarr.Codec.spec()]) :: map()
  def default_configuration(chunk_shape, codecs) do
    %{
      "chunk_shape" => Tuple.to_list(chunk_shape),
      "codecs" => Enum.map(codecs, &V3.encode_codec/1),
      "index_codecs" => default_index_codecs(),
      "index_location" => "end"
    }
  end

  defp default_index_codecs,
    do: [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}, %{"name" => "crc32c"}]

  @impl true
  def init(config, %{shape: shard_shape, dtype: dtype, fill_value: fill_value}) do
    with {:ok, chunk_shape} <- chunk_shape(config, shard_shape),
         {:ok, codecs} <- codec_list(config, "codecs", nil),
         {:ok, index_codecs} <- codec_list(config, "index_codecs", default_index_codecs()),
         {:ok, location} <- location(config),
         grid = Indexing.grid_shape(shard_shape, chunk_shape),
         :ok <- Limits.check(:shard_index, 16 * Shape.product(grid)) do
      inner_spec = %{shape: chunk_shape, dtype: dtype, fill_value: fill_value, decoded_size: nil}

      index_spec = %{
        shape: Tuple.append(grid, 2),
        dtype: :uint64,
        fill_value: @empty,
        decoded_size: nil
      }

      with {:ok, inner} <- Pipeline.new(codecs, inner_spec),
           {:ok, index} <- Pipeline.new(index_codecs, index_spec),
           {:ok, index_size} <- fixed_size(index, 16 * Shape.product(grid)) do
        {:ok,
         %__MODULE__{
           chunk_shape: chunk_shape,
           shard_shape: shard_shape,
           grid: grid,
           count: Shape.product(grid),
           inner: inner,
           index: index,
           index_size: index_size,
           location: location,
           config: %{
             "chunk_shape" => Tuple.to_list(chunk_shape),
             "codecs" => Enum.map(Pipeline.specs(inner), &V3.encode_codec/1),
             "index_codecs" => Enum.map(Pipeline.specs(index), &V3.encode_codec/1),
             "index_location" => Atom.to_string(location)
           },
           dtype: dtype,
           fill_value: fill_value,
           fill_element: DType.fill_element(dtype, fill_value),
           morton: morton_order(grid)
         }}
      end
    end
  end

  def init(config, spec), do: {:error, {:invalid_sharding_config, config, spec}}

  defp chunk_shape(%{"chunk_shape" => list}, shard_shape)
       when is_list(list) and length(list) == tuple_size(shard_shape) do
    chunk_shape = List.to_tuple(list)

    divides? =
      Enum.all?(Enum.zip(list, Tuple.to_list(shard_shape)), fn {c, s} ->
        is_integer(c) and c > 0 and rem(s, c) == 0
      end)

    if divides?,
      do: {:ok, chunk_shape},
      else: {:error, {:chunk_shape_does_not_divide_shard, chunk: list, shard: shard_shape}}
  end

  defp chunk_shape(config, shard_shape),
    do:
      {:error,
       {:invalid_sharding_config,
        "chunk_shape must list #{tuple_size(shard_shape)} positive integers, got " <>
          inspect(Map.get(config, "chunk_shape"))}}

  defp codec_list(config, key, default) do
    case Map.get(config, key, default) do
      [_ | _] = list ->
        Result.map_ok(list, fn codec ->
          with :error <- from_json(codec),
               do: {:error, {:invalid_sharding_config, "#{key}: #{inspect(codec)}"}}
        end)

      other ->
        {:error,
         {:invalid_sharding_config, "#{key} must be a non-empty list, got #{inspect(other)}"}}
    end
  end

  defp from_json(name) when is_binary(name), do: {:ok, %{name: name, configuration: %{}}}

  defp from_json(%{} = codec) do
    case {Map.get(codec, "name", Map.get(codec, :name)),
          Map.get(codec, "configuration", Map.get(codec, :configuration))} do
      {name, config} when is_binary(name) and config in [nil, :null] ->
        {:ok, %{name: name, configuration: %{}}}

      {name, %{} = config} when is_binary(name) ->
        {:ok, %{name: name, configuration: config}}

      _ ->
        :error
    end
  end

  defp from_json(_other), do: :error

  defp location(config) do
    case Map.get(config, "index_location", "end") do
      "end" -> {:ok, :end}
      "start" -> {:ok, :start}
      other -> {:error, {:invalid_sharding_config, "index_location #{inspect(other)}"}}
    end
  end

  # The index pipeline must produce a fixed number of bytes, known before reading a shard.
  defp fixed_size(%Pipeline{} = p, size) do
    stages = p.array_to_array ++ [p.array_to_bytes | p.bytes_to_bytes]

    Enum.reduce_while(stages, {:ok, size}, fn {module, state}, {:ok, size} ->
      with true <- function_exported?(module, :encoded_size, 2),
           n when is_integer(n) <- module.encoded_size(size, state) do
        {:cont, {:ok, n}}
      else
        _ -> {:halt, {:error, {:variable_size_index_codec, module.name()}}}
      end
    end)
  end

  # Linear (C order) indexes of the inner chunks, sorted by their Morton code with as many bits
  # per axis as that axis needs, as zarr-python lays chunks out; as native u32s in a binary,
  # which tasks share without copying.
  defp morton_order(grid) do
    dims = Tuple.to_list(grid)
    bits = Enum.map(dims, fn g -> bit_length(g - 1) end)
    max_bits = Enum.max(bits, fn -> 0 end)

    0..(Shape.product(grid) - 1)//1
    |> Enum.map(fn i ->
      {morton_code(Tuple.to_list(Shape.unravel(i, grid)), bits, max_bits), i}
    end)
    |> Enum.sort()
    |> Enum.reduce(<<>>, fn {_code, i}, acc -> <<acc::binary, i::32-native>> end)
  end

  defp morton_code(coords, bits, max_bits) do
    pairs = Enum.zip(coords, bits)

    {code, _} =
      Enum.reduce(0..(max_bits - 1)//1, {0, 0}, fn bit, acc ->
        Enum.reduce(pairs, acc, fn {c, b}, {code, out} ->
          if bit < b,
            do:
              {Bitwise.bor(code, Bitwise.bsl(Bitwise.band(Bitwise.bsr(c, bit), 1), out)), out + 1},
            else: {code, out}
        end)
      end)

    code
  end

  defp bit_length(0), do: 0
  defp bit_length(n), do: 1 + bit_length(Bitwise.bsr(n, 1))

  # -- the index --------------------------------------------------------------------------

  @doc "The byte range of a shard that holds its index (`{:suffix, n}` or `{0, n}`)."
  @spec index_range(t()) :: ExZarr.Storage.range()
  def index_range(%__MODULE__{location: :end, index_size: n}), do: {:suffix, n}
  def index_range(%__MODULE__{location: :start, index_size: n}), do: {0, n}

  @doc """
  The encoded index of a whole shard (the bytes at `index_range/1`).
  """
  @spec index_bytes(t(), binary()) :: {:ok, binary()} | {:error, term()}
  def index_bytes(%__MODULE__{index_size: n}, shard) when byte_size(shard) < n,
    do:
      {:error,
       {:corrupt_shard_index,
        "shard of #{byte_size(shard)} bytes is shorter than its #{n}-byte index"}}

  def index_bytes(%__MODULE__{location: :end, index_size: n}, shard),
    do: {:ok, binary_part(shard, byte_size(shard) - n, n)}

  def index_bytes(%__MODULE__{location: :start, index_size: n}, shard),
    do: {:ok, binary_part(shard, 0, n)}

  @doc """
  Decodes and validates an encoded index. Checks the index codecs (e.g. the crc32c checksum),
  that each pair is either empty (both `2^64-1`) or a real range, that ranges do not overlap
  each other or the index, and, when `shard_size` is given, that they end inside the shard.
  """
  @spec decode_index(t(), binary(), non_neg_integer() | nil) :: {:ok, index()} | {:error, term()}
  def decode_index(%__MODULE__{index_size: n} = s, bytes, shard_size) do
    cond do
      byte_size(bytes) != n ->
        corrupt("index is #{byte_size(bytes)} bytes, expected #{n}")

      true ->
        case Pipeline.decode(s.index, bytes) do
          {:ok, index} when byte_size(index) == 16 * s.count ->
            validate_index(s, index, shard_size)

          {:ok, _} ->
            corrupt("index decodes to the wrong size")

          {:error, reason} ->
            corrupt({:index_codecs, reason})
        end
    end
  end

  defp validate_index(s, index, shard_size) do
    {lo, hi} =
      case {s.location, shard_size} do
        {:start, nil} -> {s.index_size, nil}
        {:start, size} -> {s.index_size, size}
        {:end, nil} -> {0, nil}
        {:end, size} -> {0, size - s.index_size}
      end

    ranges =
      for <<offset::64-little, nbytes::64-little <- index>>,
          offset != @empty or nbytes != @empty,
          do: {offset, nbytes}

    cond do
      Enum.any?(ranges, fn {o, n} -> o == @empty or n == @empty end) ->
        corrupt("half-empty (offset, nbytes) pair")

      Enum.any?(ranges, fn {o, n} -> o < lo or (hi != nil and o + n > hi) end) ->
        corrupt("inner chunk range outside the shard's data")

      overlapping?(Enum.sort(ranges)) ->
        corrupt("overlapping inner chunk ranges")

      true ->
        {:ok, index}
    end
  end

  defp overlapping?([{o1, n1}, {o2, _} = next | rest]),
    do: o1 + n1 > o2 or overlapping?([next | rest])

  defp overlapping?(_), do: false

  defp corrupt(why), do: {:error, {:corrupt_shard_index, why}}

  @doc "The `{offset, nbytes}` of inner chunk `i` (C-order linear index), or `:empty`."
  @spec entry(index(), non_neg_integer()) :: {non_neg_integer(), non_neg_integer()} | :empty
  def entry(index, i) do
    case binary_part(index, 16 * i, 16) do
      @empty_entry -> :empty
      <<offset::64-little, nbytes::64-little>> -> {offset, nbytes}
    end
  end

  @doc "An index with no stored inner chunk."
  @spec empty_index(t()) :: index()
  def empty_index(%__MODULE__{count: count}), do: :binary.copy(@empty_entry, count)

  @doc "The C-order linear index of inner chunk `coords` within the shard."
  @spec linear(t(), tuple()) :: non_neg_integer()
  def linear(%__MODULE__{grid: grid}, coords), do: Shape.ravel(coords, grid)

  @doc "The inner chunk coordinates (within the shard) of C-order linear index `i`."
  @spec coords(t(), non_neg_integer()) :: tuple()
  def coords(%__MODULE__{grid: grid}, i), do: Shape.unravel(i, grid)

  # -- whole shards -----------------------------------------------------------------------

  @impl true
  def encode(data, %__MODULE__{} = s) do
    data = IO.iodata_to_binary(data)

    items =
      for i <- 0..(s.count - 1)//1 do
        origin = origin(s, i)
        {i, {data, s.shard_shape, origin, zeros(s), s.chunk_shape}}
      end

    with {:ok, encoded} <- encode_chunks(s, items, false),
         {:ok, {shard, _index, _count}} <- build_shard(s, encoded),
         do: {:ok, shard}
  end

  @impl true
  def decode(shard, %__MODULE__{} = s) do
    with {:ok, bytes} <- index_bytes(s, shard),
         {:ok, index} <- decode_index(s, bytes, byte_size(shard)) do
      chunks =
        for i <- 0..(s.count - 1)//1 do
          stored =
            case entry(index, i) do
              :empty -> nil
              {offset, nbytes} -> binary_part(shard, offset, nbytes)
            end

          {{zeros(s), origin(s, i), s.chunk_shape}, stored}
        end

      assemble(s, s.shard_shape, chunks)
    end
  end

  @doc """
  Encodes inner chunks in parallel. Each item is `{i, source}` where `source` is the chunk's
  packed elements, a `t:ExZarr.Native.piece/0` to cut it from (the rest is fill), or
  `{:merge, stored_bytes, piece}` to decode a stored chunk and copy the piece over it. Chunks
  equal to the fill value everywhere come back as `{i, nil}` unless `keep_fill?`.
  """
  @spec encode_chunks(
          t(),
          [{non_neg_integer(), binary() | Native.piece() | {:merge, binary(), Native.piece()}}],
          boolean()
        ) ::
          {:ok, [{non_neg_integer(), iodata() | nil}]} | {:error, term()}
  def encode_chunks(%__MODULE__{} = s, items, keep_fill?) do
    itemsize = byte_size(s.fill_element)

    items
    |> parallel(chunk_bytes(s), fn {i, source} ->
      with {:ok, chunk} <- chunk_data(s, itemsize, source) do
        cond do
          not keep_fill? and Array.fill_data?(s.dtype, s.fill_value, s.fill_element, chunk) ->
            {:ok, {i, nil}}

          true ->
            with {:ok, enc} <- Pipeline.encode(s.inner, chunk), do: {:ok, {i, enc}}
        end
      end
    end)
    |> Result.map_ok(& &1)
  end

  defp chunk_data(_s, _itemsize, chunk) when is_binary(chunk), do: {:ok, chunk}

  defp chunk_data(s, itemsize, {:merge, stored, piece}) do
    case Pipeline.decode(s.inner, stored) do
      {:ok, base} -> Native.copy_regions(s.chunk_shape, itemsize, base, [piece])
      {:error, reason} -> {:error, {:corrupt_inner_chunk, reason}}
    end
  end

  defp chunk_data(s, itemsize, piece),
    do: Native.copy_regions(s.chunk_shape, itemsize, {:fill, s.fill_element}, [piece])

  @typedoc """
  An inner chunk to place: its box `{start_in_chunk, start_in_output, count}` and its stored
  bytes, or `nil` when it is not stored (its box gets the fill value).
  """
  @type placed_chunk :: {{tuple(), tuple(), tuple()}, binary() | nil}

  @doc """
  Assembles a `shape` region from inner chunks that cover it exactly once. When the inner
  pipeline is `bytes` (little-endian) and at most one compressor, one native call
  (`ExZarr.Native.decode_into/7`) decodes every chunk into a per-thread scratch buffer and
  copies its box into place, on all schedulers' worth of threads for large regions: no binary
  per inner chunk. Other pipelines write their chunks, in parallel, into a native output
  buffer (`ExZarr.Native.outbuf_new/2`): byte-swapped ones decoded by the NIF, the rest by the
  pipeline first.
  """
  @spec assemble(t(), tuple(), [placed_chunk()]) :: {:ok, binary()} | {:error, term()}
  def assemble(%__MODULE__{} = s, shape, chunks) do
    itemsize = byte_size(s.fill_element)

    case Pipeline.native_decoder(s.inner) do
      codec when codec != nil and is_atom(codec) ->
        # (a map, not a comprehension: a malformed entry must fail, not be skipped)
        batch =
          Enum.map(chunks, fn {{chunk_start, out_start, count}, stored} ->
            {stored, chunk_start, out_start, count}
          end)

        threads = System.schedulers_online()

        case Native.decode_into(
               shape,
               itemsize,
               s.fill_element,
               codec,
               s.chunk_shape,
               batch,
               threads
             ) do
          {:error, {:corrupt_chunk, why}} -> {:error, {:corrupt_inner_chunk, why}}
          result -> result
        end

      decoder ->
        with {:ok, buf} <- Native.outbuf_new(shape, itemsize),
             :ok <-
               chunks
               |> parallel(chunk_bytes(s), &put_chunk(s, buf, decoder, &1))
               |> Result.each_ok(& &1),
             do: Native.outbuf_finish(buf)
    end
  end

  defp put_chunk(s, buf, _decoder, {{_, out_start, count}, nil}),
    do: Native.outbuf_fill(buf, s.fill_element, {out_start, count})

  defp put_chunk(s, buf, nil, {{chunk_start, out_start, count}, stored}) do
    case Pipeline.decode(s.inner, stored) do
      {:ok, chunk} ->
        Native.outbuf_put(buf, chunk, :raw, {s.chunk_shape, chunk_start, out_start, count})

      {:error, reason} ->
        {:error, {:corrupt_inner_chunk, reason}}
    end
  end

  defp put_chunk(s, buf, decoder, {{chunk_start, out_start, count}, stored}) do
    case Native.outbuf_put(buf, stored, decoder, {s.chunk_shape, chunk_start, out_start, count}) do
      :ok -> :ok
      {:error, reason} -> {:error, {:corrupt_inner_chunk, reason}}
    end
  end

  @doc "Decodes `{key, stored_bytes}` inner chunks in parallel to `{key, packed_elements}`."
  @spec decode_chunks(t(), [{term(), binary()}]) :: {:ok, [{term(), binary()}]} | {:error, term()}
  def decode_chunks(%__MODULE__{} = s, stored) do
    stored
    |> parallel(chunk_bytes(s), fn {key, bytes} ->
      case Pipeline.decode(s.inner, bytes) do
        {:ok, chunk} -> {:ok, {key, chunk}}
        {:error, reason} -> {:error, {:corrupt_inner_chunk, reason}}
      end
    end)
    |> Result.map_ok(& &1)
  end

  @doc """
  Lays out a shard from `{i, encoded | nil}` inner chunks (missing and nil ones are not
  stored): chunks in Morton order, the index at the configured end. Returns the shard, its
  decoded index and the number of inner chunks stored (with none, the shard is only an
  index: `ExZarr.Sharding` deletes it instead).
  """
  @spec build_shard(t(), [{non_neg_integer(), iodata() | nil}]) ::
          {:ok, {iodata(), index(), non_neg_integer()}} | {:error, term()}
  def build_shard(%__MODULE__{} = s, chunks) do
    by_index = for {i, enc} <- chunks, enc != nil, into: %{}, do: {i, enc}

    start = if s.location == :start, do: s.index_size, else: 0

    {body, ranges, _end} =
      for <<i::32-native <- s.morton>>, reduce: {[], %{}, start} do
        {body, ranges, offset} = acc ->
          case Map.fetch(by_index, i) do
            {:ok, enc} ->
              n = IO.iodata_length(enc)
              {[body, enc], Map.put(ranges, i, <<offset::64-little, n::64-little>>), offset + n}

            :error ->
              acc
          end
      end

    index = for i <- 0..(s.count - 1)//1, into: <<>>, do: Map.get(ranges, i, @empty_entry)

    with {:ok, encoded_index} <- Pipeline.encode(s.index, index) do
      shard =
        case s.location do
          :end -> [body, encoded_index]
          :start -> [encoded_index, body]
        end

      {:ok, {shard, index, map_size(by_index)}}
    end
  end

  @doc "Where inner chunk `i` starts within the shard, in elements along each axis."
  @spec origin(t(), non_neg_integer()) :: tuple()
  def origin(%__MODULE__{chunk_shape: chunk_shape} = s, i),
    do: Shape.mul(coords(s, i), chunk_shape)

  defp zeros(%__MODULE__{chunk_shape: shape}), do: Shape.zeros(tuple_size(shape))

  defp chunk_bytes(s), do: byte_size(s.fill_element) * Shape.product(s.chunk_shape)

  @impl true
  def configuration(%__MODULE__{config: config}), do: config

  # Inner chunks are worked on in memory: one batch of them per scheduler, in the calling
  # process when there is too little work to pay for tasks.
  defp parallel(items, item_bytes, fun),
    do: Parallel.map(items, fun, bytes: length(items) * item_bytes, batch: true)
end
