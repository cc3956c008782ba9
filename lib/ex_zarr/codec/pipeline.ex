defmodule ExZarr.Codec.Pipeline do
  @moduledoc """
  The one way a chunk moves between a store and an array's data: a chain of codecs configured
  for one chunk shape (array->array codecs, one array->bytes codec, then bytes->bytes codecs),
  and the read and write of one chunk through it.

    * `read/5` puts a box of a stored chunk into an output (`output/2`, `finish/2`): the box
      of a multi-chunk read, written in place in one native buffer.
    * `write/5` writes a piece of a chunk: a whole chunk is encoded and stored; a piece of one
      is merged into what is stored (under the chunk's write lock).
    * `read_chunk/2` / `encode/2` / `decode/2` move whole chunks.

  How a chunk moves is the pipeline's choice, from what its codecs say they can do
  (`ExZarr.Codec`): decoded by the NIF straight into the output when every codec has a
  native decoder (`native_decoder/1`); read and written in part by the array->bytes codec
  when it supports it (sharding: only the index and the inner chunks a box needs); else
  decoded by the codecs one after another. Variable-length data (`:string`, `:bytes`) moves
  as tuples of binaries instead of packed binaries.

  Packed data entering `encode/2` and leaving `decode/2` is a binary of elements in C order,
  little-endian, of the chunk's shape and data type.

      iex> spec = %{shape: {2, 2}, dtype: :uint8, fill_value: 0, decoded_size: nil}
      iex> {:ok, p} = ExZarr.Codec.Pipeline.new([%{name: "bytes", configuration: %{}}], spec)
      iex> ExZarr.Codec.Pipeline.decode(p, <<1, 2, 3, 4>>)
      {:ok, <<1, 2, 3, 4>>}
  """

  alias ExZarr.{ChunkCache, DType, Indexing, Limits, Native, Result, Shape, Storage}
  alias ExZarr.Indexing.Selection
  require DType
  alias ExZarr.Codec.{Chunk, Items, Registry}
  alias ExZarr.Codecs.{Transpose, VlenBytes, VlenLayout, VlenUtf8}
  alias ExZarr.Storage.Lock

  @enforce_keys [:array_to_array, :array_to_bytes, :bytes_to_bytes, :chunk_spec, :fill]
  defstruct [
    :array_to_array,
    :array_to_bytes,
    :bytes_to_bytes,
    :chunk_spec,
    :fill,
    :native,
    :partial,
    layout: :packed
  ]

  @type stage :: {module(), ExZarr.Codec.state()}
  @type t :: %__MODULE__{
          array_to_array: [stage()],
          array_to_bytes: stage(),
          bytes_to_bytes: [stage()],
          chunk_spec: ExZarr.Codec.chunk_spec(),
          fill: binary(),
          native: Native.outbuf_codec() | nil,
          partial: stage() | nil,
          layout: :packed | :items
        }

  @typedoc "A box of a chunk: where it starts in the chunk and in the output, and its size."
  @type box :: {chunk_start :: tuple(), out_start :: tuple(), count :: tuple()}

  @typedoc """
  Where reads put their boxes: a native output buffer for packed data, or the shape and fill
  item of a variable-length output (assembled by `finish/2` from the pieces reads return).
  """
  @type output :: {:packed, Native.outbuf()} | {:items, tuple(), binary()}

  @typedoc """
  What a read hands to `finish/2`: a box of variable-length items read from a chunk (see
  `ExZarr.Codec.Items`; the items a tuple, or the chunk's checked layout `{:layout, binary}`);
  reads into a packed output put their data in place and hand nothing.
  """
  @type piece :: {tuple() | {:layout, binary()}, tuple(), tuple(), tuple(), tuple()}

  @serializers %{string: VlenUtf8, bytes: VlenBytes}

  @doc """
  Builds the pipeline for chunks described by `chunk_spec`. Errors name the codec at fault:
  `{:error, {:unsupported_codec, name}}`, `{:error, {:invalid_codec_order, names}}`, or
  `{:error, {:invalid_codec_config, name, detail}}` (see `ExZarr.Codec.Config`). Option:
  `zarr_format:` (default 3; a v2 array may store variable-length items in Fortran order).
  """
  @spec new([ExZarr.Codec.spec()], ExZarr.Codec.chunk_spec(), keyword()) ::
          {:ok, t()} | {:error, term()}
  def new(specs, chunk_spec, opts \\ []) do
    with {:ok, resolved} <- resolve_all(specs),
         {:ok, a2a, [{a2b, a2b_config} | b2b]} <- split_stages(resolved),
         {:ok, a2a_stages, bytes_spec} <- init_array_stages(a2a, chunk_spec),
         {:ok, a2b_state} <- init_serializer(a2b, a2b_config, bytes_spec),
         {:ok, b2b_stages} <-
           init_bytes_stages(b2b, bytes_spec, encoded_size(a2b, a2b_state, bytes_spec)) do
      p = %__MODULE__{
        array_to_array: a2a_stages,
        array_to_bytes: {a2b, a2b_state},
        bytes_to_bytes: b2b_stages,
        chunk_spec: chunk_spec,
        fill: DType.fill_element(chunk_spec.dtype, chunk_spec.fill_value),
        layout: if(DType.is_var_len(chunk_spec.dtype), do: :items, else: :packed)
      }

      p = %{p | native: native(p), partial: partial(p)}
      with :ok <- check_items(p, Keyword.get(opts, :zarr_format, 3)), do: {:ok, p}
    end
  end

  @doc """
  How `ExZarr.Native.outbuf_put/4` decodes this pipeline's stored chunks in one native call
  (see `t:ExZarr.Native.outbuf_codec/0`), as the codecs state it (`c:ExZarr.Codec.native_decoder/1`):
  an array->bytes codec with a native form (`bytes`) alone or followed by one compressor with
  one, no array->array codec (`bytes` has none for the sub-byte data types, whose elements it
  rewrites). `nil` otherwise (the codecs decode, then the NIF copies).

      iex> spec = %{shape: {2}, dtype: :float64, fill_value: 0.0, decoded_size: nil}
      iex> codecs = [%{name: "bytes", configuration: %{"endian" => "big"}},
      ...>           %{name: "zstd", configuration: %{}}]
      iex> {:ok, p} = ExZarr.Codec.Pipeline.new(codecs, spec)
      iex> ExZarr.Codec.Pipeline.native_decoder(p)
      {:zstd, 8}
  """
  @spec native_decoder(t()) :: Native.outbuf_codec() | nil
  def native_decoder(%__MODULE__{native: native}), do: native

  @doc """
  True when the chunks are read and written in part by the array->bytes codec
  (`c:ExZarr.Codec.decode_partial/5`): it is the only codec, as sharding is in a sharded array.
  """
  @spec supports_partial_decode?(t()) :: boolean()
  def supports_partial_decode?(%__MODULE__{partial: partial}), do: partial != nil

  @doc """
  How many chunks may be decoded at once: for variable-length data, whose decoded size is not
  known in advance, what `ExZarr.Limits.max_bytes/0` holds of chunks decoded at their limit
  (`ExZarr.Limits.vlen_decoded_bytes/1`); no bound for packed data.
  """
  @spec max_in_flight(t()) :: pos_integer() | :infinity
  def max_in_flight(%__MODULE__{layout: :items, chunk_spec: %{shape: shape}}),
    do: max(div(Limits.max_bytes(), Limits.vlen_decoded_bytes(Shape.product(shape))), 1)

  def max_in_flight(%__MODULE__{}), do: :infinity

  @doc """
  The bytes of one decoded chunk (the pipeline's chunk shape), the estimate of work and memory
  per chunk; variable-length items count 8 bytes each.
  """
  @spec chunk_bytes(t()) :: non_neg_integer()
  def chunk_bytes(%__MODULE__{chunk_spec: %{shape: shape}} = p),
    do: item_bytes(p) * Shape.product(shape)

  @doc """
  The bytes a read of `parts` decodes (boxes of chunks: `count:` elements along each axis,
  `chunk_start:` `{:flat, points}` for points), the estimate that decides on parallel tasks:
  whole chunks, except in a pipeline reading in part (sharding), which decodes about the
  bytes a box returns, and a whole inner chunk for each of a part's points (up to every inner
  chunk of the chunk). A part for which `cached?` holds (its chunk is in a chunk cache, decoded)
  counts as the bytes of its box.
  """
  @spec read_work(t(), [%{count: tuple(), chunk_start: term()}], (map() -> boolean())) ::
          non_neg_integer()
  def read_work(%__MODULE__{} = p, parts, cached? \\ fn _part -> false end) do
    case inner_chunk_shape(p) do
      {:ok, inner} ->
        inner_size = Shape.product(inner)
        # (the pipeline's chunk: the largest shard of a grid whose shards differ)
        per_chunk = div(Shape.product(p.chunk_spec.shape), max(inner_size, 1))
        elements = Enum.reduce(parts, 0, &(&2 + part_work(&1, inner_size, per_chunk)))
        elements * max(item_bytes(p), 1)

      {:error, :not_sharded} ->
        chunk = chunk_bytes(p)

        Enum.reduce(parts, 0, fn part, acc ->
          acc + if cached?.(part), do: Shape.product(part.count) * item_bytes(p), else: chunk
        end)
    end
  end

  defp part_work(%{chunk_start: {:flat, _}, count: {n}}, inner_size, per_chunk),
    do: min(n, per_chunk) * inner_size

  defp part_work(part, _inner_size, _per_chunk), do: Shape.product(part.count)

  defp item_bytes(%__MODULE__{layout: :items}), do: 8
  defp item_bytes(%__MODULE__{fill: fill}), do: byte_size(fill)

  @doc """
  The pipeline as codec specs with every codec's complete configuration, as the codecs
  themselves state it (defaults made explicit, e.g. blosc's `typesize`): what metadata stores.
  """
  @spec specs(t()) :: [ExZarr.Codec.spec()]
  def specs(%__MODULE__{} = p) do
    for {module, state} <- p.array_to_array ++ [p.array_to_bytes | p.bytes_to_bytes],
        do: %{name: module.name(), configuration: module.configuration(state)}
  end

  # -- whole chunks -------------------------------------------------------------------------

  @doc """
  Encodes one chunk to the bytes to store: packed elements, or for variable-length data the
  items as a list (or tuple) in C order. Items of more than
  `ExZarr.Limits.max_vlen_chunk_bytes/0` in all are `{:error, {:too_large, :vlen_chunk,
  bytes, limit}}`: a chunk that could not be read back is not written.
  """
  @spec encode(t(), iodata() | [binary()] | tuple()) :: {:ok, iodata()} | {:error, term()}
  def encode(%__MODULE__{layout: :items} = p, items) do
    items = if is_tuple(items), do: Tuple.to_list(items), else: items

    items =
      if fortran?(p),
        do: Items.fortran_to_c(List.to_tuple(items), Shape.reverse(p.chunk_spec.shape)),
        else: items

    with :ok <- Limits.check_vlen_chunk(item_bytes(items, 0)),
         do: run([p.array_to_bytes | p.bytes_to_bytes], items, :encode)
  end

  def encode(%__MODULE__{} = p, data),
    do: run(p.array_to_array ++ [p.array_to_bytes | p.bytes_to_bytes], data, :encode)

  # The bytes of the binaries among `items`: any other item, or an improper tail, is the
  # serializer's error to name.
  defp item_bytes([item | rest], sum) when is_binary(item),
    do: item_bytes(rest, sum + byte_size(item))

  defp item_bytes([_item | rest], sum), do: item_bytes(rest, sum)
  defp item_bytes(_tail, sum), do: sum

  @doc """
  Decodes stored bytes back to packed C-order little-endian elements (a tuple of items for
  variable-length data).
  """
  @spec decode(t(), binary()) :: {:ok, binary() | tuple()} | {:error, term()}
  def decode(%__MODULE__{layout: :items} = p, data) do
    with {:ok, items} <- run(Enum.reverse(p.bytes_to_bytes) ++ [p.array_to_bytes], data, :decode) do
      if fortran?(p),
        do: {:ok, List.to_tuple(Items.fortran_to_c(items, p.chunk_spec.shape))},
        else: {:ok, items}
    end
  end

  def decode(%__MODULE__{} = p, data) do
    stages = Enum.reverse(p.bytes_to_bytes) ++ [p.array_to_bytes | Enum.reverse(p.array_to_array)]

    case run(stages, data, :decode) do
      {:ok, decoded} -> {:ok, IO.iodata_to_binary(decoded)}
      error -> error
    end
  end

  @doc """
  Like `decode/2`, for a task handing its result to another process: variable-length items
  stay their layout, checked, as `{:layout, binary}` (a binary is passed by reference, where a
  tuple of sub-binaries is copied item by item), which `put_decoded/4` and `finish/2` take.
  """
  @spec decode_to_send(t(), binary()) ::
          {:ok, binary() | tuple() | {:layout, binary()}} | {:error, term()}
  def decode_to_send(%__MODULE__{layout: :items, array_to_bytes: {module, state}} = p, data) do
    if fortran?(p) do
      decode(p, data)
    else
      with {:ok, layout} <- run(Enum.reverse(p.bytes_to_bytes), data, :decode) do
        layout = IO.iodata_to_binary(layout)

        case module.check_layout(layout, state) do
          :ok -> {:ok, {:layout, layout}}
          {:error, reason} -> {:error, {:decode, module.name(), reason}}
        end
      end
    end
  end

  def decode_to_send(p, data), do: decode(p, data)

  @doc """
  Reads and decodes the whole chunk stored at `chunk`: a binary of packed elements, or a list
  of items. `{:error, :not_found}` when it is not stored; undecodable data is
  `{:error, {:corrupt_chunk, key, reason}}`.
  """
  @spec read_chunk(t(), Chunk.t(), keyword()) :: {:ok, binary() | [binary()]} | {:error, term()}
  def read_chunk(p, chunk, opts \\ []) do
    with {:ok, data} <- fetch_decoded(p, chunk, Keyword.get(opts, :cache)),
         do: {:ok, api_form(data)}
  end

  @doc "Like `read_chunk/3`, with the fill value for a chunk that is not stored."
  @spec read_chunk_or_fill(t(), Chunk.t(), keyword()) ::
          {:ok, binary() | [binary()]} | {:error, term()}
  def read_chunk_or_fill(p, chunk, opts \\ []) do
    case read_chunk(p, chunk, opts) do
      {:error, :not_found} -> fill_chunk(p)
      other -> other
    end
  end

  @doc "A whole chunk of the fill value (allocated by the NIF: too large is an error)."
  @spec fill_chunk(t()) :: {:ok, binary() | [binary()]} | {:error, term()}
  def fill_chunk(%__MODULE__{layout: :items} = p),
    do: {:ok, List.duplicate(p.fill, Shape.product(p.chunk_spec.shape))}

  def fill_chunk(p),
    do: Native.copy_regions(p.chunk_spec.shape, byte_size(p.fill), {:fill, p.fill}, [])

  @doc """
  True when every element of decoded data equals the fill value: a NaN fill value matches any
  NaN, as in zarr-python; everything else compares bitwise.
  """
  @spec fill?(t(), binary() | tuple() | [binary()]) :: boolean()
  def fill?(%__MODULE__{layout: :items, fill: fill}, items), do: Items.fill?(items, fill)

  def fill?(%__MODULE__{chunk_spec: %{fill_value: :nan, dtype: dtype}, fill: fill}, data)
      when dtype in [:float16, :float32, :float64],
      do: Native.all_nan(data, byte_size(fill))

  def fill?(%__MODULE__{fill: fill}, data), do: Native.all_equal(data, fill)

  # -- reading boxes ------------------------------------------------------------------------

  @doc """
  A new output of `shape` for `read/5`: a native buffer that every box is written into once
  (packed data), or the description of a list of items.
  """
  @spec output(t(), tuple()) :: {:ok, output()} | {:error, term()}
  def output(%__MODULE__{layout: :items, fill: fill}, shape), do: {:ok, {:items, shape, fill}}

  def output(%__MODULE__{fill: fill}, shape) do
    collect_dead_outputs(Shape.product(shape) * byte_size(fill))

    with {:ok, buf} <- Native.outbuf_new(shape, byte_size(fill)),
         do: {:ok, {:packed, buf}}
  end

  # A large output takes its memory from the outputs of earlier reads that are garbage
  # (c_src/bufpool.c: memory whose pages are already faulted in), but those go back only when
  # the process that held them is collected. A caller reading large arrays in a loop is often
  # not: its binary heap limit grew with the results, so each read would fault in fresh memory
  # (100-300 ms for 134 MB here, against 65 ms for the whole read). So the caller is collected
  # first, when the collection costs less than faulting in the output: in full when its whole
  # heap is small next to the output (old results are in the old heap), else its young heap
  # alone when it is at most half the output (it costs at most copying that much, and a result
  # dropped since the last collection is there: a caller with a 126 MB heap reading 134 MB in a
  # loop took 71-76 ms a read, against 71-132 without).
  # The VM frees the memory of a dead result in its scheduler's deferred work, which a yield
  # lets run.
  @collect_min 4 * 1024 * 1024
  defp collect_dead_outputs(bytes) when bytes >= @collect_min do
    [total_heap_size: total, heap_size: young] =
      Process.info(self(), [:total_heap_size, :heap_size])

    cond do
      total * 64 <= bytes -> collect(:major)
      young * 16 <= bytes -> collect(:minor)
      true -> :ok
    end
  end

  defp collect_dead_outputs(_bytes), do: :ok

  defp collect(type) do
    :erlang.garbage_collect(self(), type: type)
    :erlang.yield()
    :ok
  end

  @doc """
  The output's data once every box was read: the buffer as a binary (no copy), or the items
  assembled from the pieces the reads returned, in C order.
  """
  @spec finish(output(), [piece()]) :: {:ok, binary() | [binary()]} | {:error, term()}
  def finish({:packed, buf}, []), do: Native.outbuf_finish(buf)

  # Boxes of chunks are assembled natively, straight from their layouts (one list made in one
  # call, with no tuple of a chunk's items between); a selection of points or index lists by
  # `ExZarr.Codec.Items`.
  def finish({:items, shape, fill}, pieces) do
    if Enum.all?(pieces, &Items.box_piece?(&1, tuple_size(shape))) do
      {:ok, _items} = Native.vlen_assemble(shape, fill, pieces)
    else
      {:ok, Items.assemble(shape, {:fill, fill}, Enum.map(pieces, &split_layout/1))}
    end
  end

  # The items of a piece whose chunk came as its layout (`decode_to_send/2`).
  defp split_layout({{:layout, _} = layout, shape, chunk_start, out_start, count}),
    do: {layout_items(layout), shape, chunk_start, out_start, count}

  defp split_layout(piece), do: piece

  # The items of a layout that `decode_to_send/2` checked, as a tuple.
  defp layout_items({:layout, <<count::little-32, _::binary>> = layout}) do
    {:ok, items} = VlenLayout.decode(layout, count)
    items
  end

  @doc """
  Reads the box of the chunk stored at `chunk` into `out`; a chunk that is not stored fills
  its box. Returns the pieces a variable-length output assembles (`[]` for packed data).
  Options go to a codec reading in part (`coalesce_gap:` for sharding).
  """
  @spec read(t(), Chunk.t(), box(), output(), keyword()) :: {:ok, [piece()]} | {:error, term()}
  def read(p, chunk, box, out, opts \\ [])

  def read(%__MODULE__{partial: {module, state}} = p, chunk, box, out, opts) do
    result = module.decode_partial(state, chunk, box, out, opts)
    if p.layout == :items, do: as_chunk_fault(result, chunk.key), else: result
  end

  def read(%__MODULE__{} = p, chunk, box, out, opts) do
    case Keyword.get(opts, :cache) do
      nil ->
        case Chunk.get(chunk) do
          {:ok, stored} -> with_key(put(p, stored, box, out), chunk.key)
          {:error, :not_found} -> fill(p, box, out)
          error -> error
        end

      cache ->
        # decoded into a binary of its own, kept by the cache, then copied into the output
        case fetch_decoded(p, chunk, cache) do
          {:ok, data} -> with_key(put_decoded(p, data, box, out), chunk.key)
          {:error, :not_found} -> fill(p, box, out)
          error -> error
        end
    end
  end

  @doc """
  Puts the box of a chunk whose stored bytes are in hand into `out` (used by codecs that
  read inner chunks, like sharding). Errors are the decoders' reasons.
  """
  @spec put(t(), binary(), box(), output()) :: {:ok, [piece()]} | {:error, term()}
  def put(%__MODULE__{native: nil} = p, stored, box, out) do
    with {:ok, data} <- decode_to_send(p, stored), do: put_decoded(p, data, box, out)
  end

  def put(%__MODULE__{native: native} = p, stored, box, {:packed, buf}),
    do: outbuf_put(p, buf, stored, native, box)

  @doc """
  Puts the box of a decoded chunk (packed elements, or items as a tuple or a checked layout:
  see `decode_to_send/2`) into `out`.
  """
  @spec put_decoded(t(), binary() | tuple() | {:layout, binary()}, box(), output()) ::
          {:ok, [piece()]} | {:error, term()}
  def put_decoded(p, data, box, {:packed, buf}), do: outbuf_put(p, buf, data, :raw, box)

  def put_decoded(p, items, {chunk_start, out_start, count}, {:items, _, _}),
    do: {:ok, [{items, p.chunk_spec.shape, chunk_start, out_start, count}]}

  @doc "Fills the box in `out` with the fill value."
  @spec fill(t(), box(), output()) :: {:ok, [piece()]} | {:error, term()}
  def fill(p, {_chunk_start, out_start, count}, {:packed, buf}) do
    with :ok <- Native.outbuf_fill(buf, p.fill, {out_start, count}), do: {:ok, []}
  end

  def fill(_p, _box, {:items, _, _}), do: {:ok, []}

  @doc """
  Decodes a batch of stored inner chunks of `chunk_shape` (`t:ExZarr.Native.batch_chunk/0`,
  each decoded by the native decoder `codec`, `nil` ones filled with `fill`) straight into
  their boxes of a packed output, on as many native threads as there are schedulers; errors
  are the batch decoder's (`ExZarr.Native.outbuf_put_batch/6`). Sharding calls it as each
  shard's bytes arrive, so a shard's bytes do not outlive their decoding.
  """
  @spec put_batch(output(), Native.batch_codec(), tuple(), binary(), [Native.batch_chunk()]) ::
          {:ok, [piece()]} | {:error, term()}
  def put_batch({:packed, buf}, codec, chunk_shape, fill, chunks) do
    threads = System.schedulers_online()

    with :ok <- Native.outbuf_put_batch(buf, fill, codec, chunk_shape, chunks, threads),
         do: {:ok, []}
  end

  defp outbuf_put(p, buf, data, codec, {chunk_start, out_start, count}) do
    {shape, start} = source(p.chunk_spec.shape, chunk_start)

    with :ok <- Native.outbuf_put(buf, data, codec, {shape, start, out_start, count}),
         do: {:ok, []}
  end

  # A chunk's shape and a start in it as the native kernels take them: points
  # (`{:flat, list}`) address the chunk as one flat axis.
  defp source(shape, {:flat, list}), do: {{Shape.product(shape)}, {list}}
  defp source(shape, start), do: {shape, start}

  @doc """
  The chunk grids nested in this pipeline's chunks (sharding's inner chunks): `[]`, or the
  inner chunk shape. Point selections are planned over them (`ExZarr.Indexing.Selection.plan/3`).
  """
  @spec inner_levels(t()) :: [tuple()]
  def inner_levels(p) do
    case inner_chunk_shape(p) do
      {:ok, inner} -> [inner]
      {:error, :not_sharded} -> []
    end
  end

  @doc """
  `data` of `shape` rearranged by one gathering or scattering copy: a new array of `shape`
  (packed, or a list of items) whose elements at `dst_start` come from `src_start` (starts
  with index lists, `t:ExZarr.Native.start/0`; the caller's order of a selection).
  """
  @spec rearrange(t(), binary() | tuple(), tuple(), tuple(), tuple()) ::
          {:ok, binary() | [binary()]} | {:error, term()}
  def rearrange(%__MODULE__{layout: :items} = p, items, shape, src_start, dst_start),
    do:
      {:ok, Items.assemble(shape, {:fill, p.fill}, [{items, shape, src_start, dst_start, shape}])}

  def rearrange(p, data, shape, src_start, dst_start),
    do:
      Native.copy_regions(shape, byte_size(p.fill), {:fill, p.fill}, [
        {data, shape, src_start, dst_start, shape}
      ])

  @doc """
  The inner chunk shape of a pipeline whose chunks hold a grid of inner chunks (sharding),
  else `{:error, :not_sharded}`.
  """
  @spec inner_chunk_shape(t()) :: {:ok, tuple()} | {:error, :not_sharded}
  def inner_chunk_shape(%__MODULE__{partial: {module, state}}),
    do: {:ok, module.inner_chunk_shape(state)}

  def inner_chunk_shape(%__MODULE__{}), do: {:error, :not_sharded}

  @doc """
  Reads one inner chunk (by its coordinates in the chunk's inner grid) of the chunk stored at
  `chunk`, fetching only its bytes. `{:error, :not_found}` when it is not stored.
  """
  @spec read_inner_chunk(t(), Chunk.t(), tuple()) :: {:ok, binary()} | {:error, term()}
  def read_inner_chunk(%__MODULE__{partial: {module, state}}, chunk, coords) do
    with {:ok, data} <- module.read_inner_chunk(state, chunk, coords), do: {:ok, api_form(data)}
  end

  @doc """
  The inner chunks (`inner_chunk_shape/1`) of the decoded chunk `data` of `shape`, placed at
  `origin` in an array of `array_shape`: those that start inside the array, each cut from
  `data` as a new binary, with its coordinates in the array's grid of inner chunks.
  """
  @spec inner_chunks(t(), binary(), tuple(), tuple(), tuple()) ::
          {:ok, [{tuple(), binary()}]} | {:error, term()}
  def inner_chunks(p, data, shape, origin, array_shape) do
    with {:ok, inner} <- inner_chunk_shape(p) do
      base = Shape.zip_with(origin, inner, &div/2)

      Indexing.chunk_coords(shape, inner)
      |> Stream.map(&{Shape.add(base, &1), &1})
      |> Stream.filter(fn {global, _} -> Indexing.valid_chunk?(array_shape, inner, global) end)
      |> Result.map_ok(fn {global, local} ->
        with {:ok, cut} <- cut(p, data, shape, Shape.mul(local, inner), inner),
             do: {:ok, {global, cut}}
      end)
    end
  end

  # The box `shape` at `start` of decoded packed data of `data_shape`, as a new binary.
  defp cut(p, data, data_shape, start, shape) do
    zero = Shape.zeros(tuple_size(shape))

    Native.copy_regions(shape, byte_size(p.fill), {:fill, p.fill}, [
      {data, data_shape, start, zero, shape}
    ])
  end

  # -- writing ------------------------------------------------------------------------------

  @doc """
  `:ok` when `data` has the form the caller's data takes: a binary of packed elements, or for
  variable-length data a list of binaries (checked item by item by `check_data/3`).
  """
  @spec check_form(t(), term()) :: :ok | {:error, term()}
  def check_form(%__MODULE__{layout: :items}, _data), do: :ok
  def check_form(_p, data) when is_binary(data), do: :ok

  def check_form(_p, data) when is_list(data),
    do: {:error, {:invalid_data, "expected a binary of packed elements, got a list"}}

  def check_form(_p, data),
    do:
      {:error,
       {:invalid_data, "expected a binary of packed elements, got #{inspect(data, limit: 3)}"}}

  @doc """
  Checks the caller's data for `count` elements: `{:ok, data}` in the form `piece/4` takes (a
  tuple of items for variable-length data), or an error saying what is wrong.
  """
  @spec check_data(t(), binary() | [binary()], non_neg_integer()) ::
          {:ok, binary() | tuple()} | {:error, term()}
  def check_data(%__MODULE__{layout: :items, chunk_spec: %{dtype: dtype}}, items, count) do
    with :ok <- VlenLayout.check_items(items, count, dtype == :string),
         do: {:ok, if(is_tuple(items), do: items, else: List.to_tuple(items))}
  end

  def check_data(%__MODULE__{fill: fill}, data, count) do
    if byte_size(data) == count * byte_size(fill),
      do: {:ok, data},
      else: {:error, {:wrong_data_size, expected: count * byte_size(fill), got: byte_size(data)}}
  end

  @doc """
  The piece of the caller's data (checked by `check_data/3`, of `data_shape`) that goes into
  the box of one chunk, as `write/5` takes it. Packed data is shared by every piece; the items
  a chunk needs are copied out, so that a task writing the chunk gets only its own.
  """
  @spec piece(t(), binary() | tuple(), tuple(), box()) :: Native.piece()
  def piece(%__MODULE__{layout: :items}, items, data_shape, {chunk_start, out_start, count}) do
    zero = Shape.zeros(tuple_size(count))

    own =
      if count == data_shape,
        do: items,
        else:
          List.to_tuple(
            Items.assemble(count, {:fill, nil}, [{items, data_shape, out_start, zero, count}])
          )

    {own, count, zero, chunk_start, count}
  end

  def piece(_p, data, data_shape, {chunk_start, out_start, count}),
    do: {data, data_shape, out_start, chunk_start, count}

  @doc """
  Writes `piece` (a `t:ExZarr.Native.piece/0` whose destination is the chunk; its source a
  tuple of items for variable-length data) into the chunk stored at `chunk`. `extent` is the
  part of the chunk inside the array: a piece covering it replaces the chunk without reading
  it, unconditionally; a smaller one is merged into the stored chunk by
  `ExZarr.Storage.update/4` (a read-modify-write on the chunk's generation, retried on
  conflict, under the node-wide lock), so that concurrent writes of other parts of the chunk,
  from any node or OS process, are kept. A chunk left equal to the fill value everywhere is
  deleted (a partial write deletes it on the generation it read: see
  `ExZarr.Storage.Update`) and not stored when absent, unless `keep_fill: true`. On a store
  without conditional
  writes a partial write is refused unless `single_writer: true` (then the node lock alone
  guards it). With `cache:` (an `ExZarr.ChunkCache`) the chunk written is cached there; other
  caches of the node forget it.
  """
  @spec write(t(), Chunk.t(), Native.piece(), tuple(), keyword()) :: :ok | {:error, term()}
  def write(%__MODULE__{partial: {module, state}}, chunk, piece, extent, opts),
    do: module.encode_partial(state, chunk, piece, extent, opts)

  def write(p, chunk, {_, _, _, chunk_start, count} = piece, extent, opts) do
    keep_fill? = Keyword.get(opts, :keep_fill, false)
    cache = Keyword.get(opts, :cache)

    if count == extent and Shape.zero?(chunk_start),
      do: store(p, chunk, build(p, nil, [piece], keep_fill?), cache),
      else: write_partial(p, chunk, piece, keep_fill?, cache, opts)
  end

  defp write_partial(p, chunk, piece, keep_fill?, cache, opts) do
    change = fn stored ->
      with {:ok, base} <- decode_stored(p, stored, chunk.key),
           {:ok, data, encoded} <- build(p, base, [piece], keep_fill?) do
        cond do
          encoded != nil -> {:write, encoded, data}
          stored == nil -> {:keep, nil}
          true -> {:delete, :deleted}
        end
      end
    end

    # (the node lock held until the cache has the chunk: it never gets an older one)
    Lock.run(chunk.storage, chunk.key, fn ->
      case Storage.update(chunk.storage, chunk.key, change, update_options(opts)) do
        {:ok, nil, _generation} -> :ok
        {:ok, :deleted, _generation} -> ChunkCache.written(cache, chunk, [{:chunk, nil}])
        {:ok, data, _generation} -> store_cached(p, chunk, data, cache)
        error -> error
      end
    end)
  end

  @doc """
  The options of `ExZarr.Storage.update/4` for a read-modify-write of a chunk written with
  `opts` (`single_writer: true`: the node lock alone where the store has no conditions).
  """
  @spec update_options(keyword()) :: keyword()
  def update_options(opts) do
    if Keyword.get(opts, :single_writer, false),
      do: [without_conditions: :node_lock],
      else: []
  end

  defp decode_stored(_p, nil, _key), do: {:ok, nil}
  defp decode_stored(p, stored, key), do: with_key(decode(p, stored), key)

  @doc """
  Keeps the box of `count` elements at the chunk's origin of the chunk stored at `chunk` and
  makes the rest the fill value (a chunk cut by a shrinking resize), as one
  `ExZarr.Storage.update/4` of it (see `write/5`; the chunk is stored even when left all
  fill). A chunk that is not stored stays so.
  """
  @spec keep(t(), Chunk.t(), tuple(), keyword()) :: :ok | {:error, term()}
  def keep(p, chunk, count, opts) do
    shape = p.chunk_spec.shape
    zero = Shape.zeros(tuple_size(shape))

    change = fn
      nil ->
        {:keep, :ok}

      stored ->
        with :ok <- check_whole(p),
             {:ok, data} <- decode_stored(p, stored, chunk.key),
             data = if(is_list(data), do: List.to_tuple(data), else: data),
             {:ok, _data, encoded} <- build(p, nil, [{data, shape, zero, zero, count}], true),
             do: {:write, encoded, :ok}
    end

    with {:ok, :ok, _generation} <-
           Storage.update(chunk.storage, chunk.key, change, update_options(opts)),
         do: ChunkCache.written(nil, chunk, [{cache_tag(p), nil}])
  end

  @doc """
  Deletes the chunk stored at `chunk` (a missing one is not an error); caches forget it.
  """
  @spec delete(t(), Chunk.t()) :: :ok | {:error, term()}
  def delete(p, chunk) do
    with :ok <- Chunk.delete(chunk), do: ChunkCache.written(nil, chunk, [{cache_tag(p), nil}])
  end

  # What a cache holds for a chunk of this pipeline: the decoded chunk, or for a codec
  # reading in part (sharding) the index, which the inner chunks' entries depend on.
  defp cache_tag(%__MODULE__{partial: nil}), do: :chunk
  defp cache_tag(%__MODULE__{}), do: :index

  @doc """
  Builds a chunk from `base` (its decoded data, or nil for the fill value) and `pieces` copied
  over it, and encodes it: `{:ok, nil}` when it is the fill value everywhere and not
  `keep_fill?` (such chunks are not stored). A single piece that is the whole chunk and one
  run of its source is encoded as it is, without a copy.
  """
  @spec encode_chunk(t(), binary() | tuple() | nil, [Native.piece()], boolean()) ::
          {:ok, iodata() | nil} | {:error, term()}
  def encode_chunk(p, base, pieces, keep_fill?) do
    with {:ok, _data, encoded} <- build(p, base, pieces, keep_fill?), do: {:ok, encoded}
  end

  # The merged chunk and its encoding (nil: not to be stored). A box to gather is never all
  # fill: `merge/3` gathers only a box whose first element is not.
  defp build(p, base, pieces, keep_fill?) do
    with {:ok, data} <- merge(p, base, pieces) do
      cond do
        not keep_fill? and not to_gather?(data) and fill?(p, data) -> {:ok, data, nil}
        true -> with {:ok, encoded} <- encode(p, data), do: {:ok, data, encoded}
      end
    end
  end

  defp merge(%__MODULE__{layout: :items} = p, base, pieces),
    do: {:ok, Items.assemble(p.chunk_spec.shape, base || {:fill, p.fill}, pieces)}

  # A piece covering the chunk alone: a slice of its data when the chunk is one run of it;
  # else the box, gathered by the compressor in its own NIF call (see `gathers?/1`), unless its
  # first element is fill (then the copy that checks the rest is the one encoded); or a copy.
  defp merge(
         %__MODULE__{chunk_spec: %{shape: shape}} = p,
         nil,
         [{data, from, at, dst, shape}] = pieces
       ) do
    itemsize = byte_size(p.fill)
    box = {:gather, data, from, at, shape, itemsize}

    with true <- Selection.box?(%{chunk_start: dst}) and Selection.box?(%{chunk_start: at}),
         :error <- Indexing.contiguous(from, at, shape),
         true <- gathers?(p) and not fill?(p, first_element(box)) do
      {:ok, box}
    else
      {:ok, first, n} -> {:ok, binary_part(data, first * itemsize, n * itemsize)}
      false -> copy_merge(p, nil, pieces)
    end
  end

  defp merge(p, base, pieces), do: copy_merge(p, base, pieces)

  # Whether encoding takes a chunk as a box of a larger array (`t:Native.encoder_input/0`): the
  # serializer passes packed bytes on as they are to one compressor (each compressor with a
  # native decoder hands its input to a NIF that gathers boxes).
  defp gathers?(%__MODULE__{native: native}), do: is_atom(native) and native not in [nil, :raw]

  defp to_gather?(data), do: match?({:gather, _, _, _, _, _}, data)

  # The bytes of a box to gather, and of its first element.
  defp gathered(p, {:gather, data, from, at, count, _itemsize}) do
    {:ok, bytes} = copy_merge(p, nil, [{data, from, at, Shape.zeros(tuple_size(count)), count}])
    bytes
  end

  defp first_element({:gather, data, from, at, _count, itemsize}),
    do: binary_part(data, Shape.ravel(at, from) * itemsize, itemsize)

  defp copy_merge(p, base, pieces) do
    {shape, pieces} = flat_pieces(p.chunk_spec.shape, pieces)
    Native.copy_regions(shape, byte_size(p.fill), base || {:fill, p.fill}, pieces)
  end

  # Pieces writing points (`{:flat, list}` destinations) address the chunk as one flat axis.
  defp flat_pieces(shape, [{_, _, _, {:flat, _}, _} | _] = pieces),
    do:
      {{Shape.product(shape)},
       Enum.map(pieces, fn {d, f, a, {:flat, l}, n} -> {d, f, a, {l}, n} end)}

  defp flat_pieces(shape, pieces), do: {shape, pieces}

  defp store(_p, chunk, {:ok, _data, nil}, cache) do
    with :ok <- Chunk.delete(chunk), do: ChunkCache.written(cache, chunk, [{:chunk, nil}])
  end

  defp store(p, chunk, {:ok, data, encoded}, cache) do
    with :ok <- Chunk.put(chunk, encoded), do: store_cached(p, chunk, data, cache)
  end

  defp store(_p, _chunk, error, _cache), do: error

  # Caches forget the chunk written, or `cache` holds it.
  defp store_cached(p, chunk, data, cache) do
    if cache do
      data = cached(p, data)
      ChunkCache.written(cache, chunk, [{:chunk, data, data_size(p, data)}])
    else
      ChunkCache.written(nil, chunk, [{:chunk, nil}])
    end
  end

  # -- helpers ------------------------------------------------------------------------------

  @doc false
  # The decoded chunk stored at `chunk`, through `cache` when there is one.
  @spec fetch_decoded(t(), Chunk.t(), ChunkCache.t() | nil) ::
          {:ok, binary() | tuple()} | {:error, term()}
  def fetch_decoded(p, chunk, nil) do
    with :ok <- check_whole(p),
         {:ok, stored} <- Chunk.get(chunk),
         do: with_key(decode(p, stored), chunk.key)
  end

  def fetch_decoded(p, chunk, cache) do
    with :ok <- check_whole(p),
         :miss <- ChunkCache.fetch(cache, chunk, :chunk) do
      ChunkCache.read_through(cache, chunk, :chunk, fn ->
        with {:ok, stored, generation} <- Chunk.get_with_generation(chunk),
             {:ok, data} <- with_key(decode_to_send(p, stored), chunk.key),
             do: {:ok, data, generation, data_size(p, data)}
      end)
    end
  end

  # Decoded data as a cache keeps it on a write: items as a tuple (a read caches their layout,
  # `decode_to_send/2`: a lookup copies a binary's reference out of the table, a tuple item by
  # item), packed data (a binary, or a box of the caller's data) as a binary of its own (a
  # slice of the caller's data must not pin all of it).
  defp cached(_p, items) when is_list(items), do: List.to_tuple(items)
  defp cached(p, {:gather, _, _, _, _, _} = box), do: gathered(p, box)
  defp cached(_p, data), do: ExZarr.Storage.Keys.owned(data)

  # A whole chunk of a codec reading in part is decoded only when it fits in memory (its
  # parts are read without it).
  defp check_whole(%__MODULE__{partial: {module, state}}) do
    if function_exported?(module, :check_whole, 1), do: module.check_whole(state), else: :ok
  end

  defp check_whole(%__MODULE__{}), do: :ok

  @doc false
  # The bytes decoded data holds (items: their layout's size, or their bytes plus a word each).
  @spec data_size(t(), binary() | tuple() | {:layout, binary()}) :: non_neg_integer()
  def data_size(%__MODULE__{layout: :items}, {:layout, layout}), do: byte_size(layout)

  def data_size(%__MODULE__{layout: :items}, items) when is_tuple(items),
    do: Enum.reduce(Tuple.to_list(items), 0, &(&2 + byte_size(&1) + 8))

  def data_size(%__MODULE__{layout: :items}, items),
    do: Enum.reduce(items, 0, &(&2 + byte_size(&1) + 8))

  def data_size(_p, data), do: byte_size(data)

  defp api_form({:layout, _} = layout), do: layout |> layout_items() |> Tuple.to_list()
  defp api_form(items) when is_tuple(items), do: Tuple.to_list(items)
  defp api_form(data), do: data

  # Variable-length reads report an inner chunk they cannot decode as a fault of the chunk, as
  # whole-chunk reads do.
  defp as_chunk_fault({:error, {:corrupt_inner_chunk, _} = why}, key),
    do: {:error, {:corrupt_chunk, key, why}}

  defp as_chunk_fault(other, _key), do: other

  defp with_key({:error, reason}, key), do: {:error, {:corrupt_chunk, key, reason}}
  defp with_key(ok, _key), do: ok

  defp run([], data, _direction), do: {:ok, data}

  defp run([{module, state} | rest], data, direction) do
    input =
      if direction == :decode and not is_tuple(data), do: IO.iodata_to_binary(data), else: data

    case apply(module, direction, [input, state]) do
      {:ok, out} -> run(rest, out, direction)
      {:error, reason} -> {:error, {direction, module.name(), reason}}
    end
  end

  # The native decoder when every stage has one: the array->bytes codec's form (`:raw` or
  # `{:raw, swap}`) combined with at most one compressor.
  defp native(%__MODULE__{layout: :packed, array_to_array: [], array_to_bytes: a2b} = p) do
    case {native_of(a2b), Enum.map(p.bytes_to_bytes, &native_of/1)} do
      {nil, _} -> nil
      {base, []} -> base
      {:raw, [codec]} -> codec
      {{:raw, swap}, [codec]} when codec != nil -> {codec, swap}
      _ -> nil
    end
  end

  defp native(%__MODULE__{}), do: nil

  defp native_of({module, state}) do
    if function_exported?(module, :native_decoder, 1), do: module.native_decoder(state)
  end

  defp partial(%__MODULE__{
         array_to_array: [],
         bytes_to_bytes: [],
         array_to_bytes: {module, _} = a2b
       }) do
    if function_exported?(module, :decode_partial, 5), do: a2b
  end

  defp partial(%__MODULE__{}), do: nil

  # Variable-length items: the type's vlen codec (possibly inside sharding) and no
  # array->array codec but a v2 `order: "F"`. (zarr-python 3 leaves a v3 `transpose` without
  # effect on vlen items, so v3 transposes are refused.)
  defp check_items(%__MODULE__{layout: :packed}, _format), do: :ok

  defp check_items(%__MODULE__{chunk_spec: %{dtype: dtype}} = p, format) do
    {serializer, _} = p.array_to_bytes
    expected = Map.fetch!(@serializers, dtype)

    cond do
      # variable-length shards must fit in memory whole, as a chunk's items do
      (error = check_whole(p)) != :ok ->
        error

      serializer != expected and p.partial == nil ->
        {:error,
         {:unsupported_codec, "#{serializer.name()} for #{dtype} data (use #{expected.name()})"}}

      format == 2 and fortran?(p) ->
        :ok

      p.array_to_array != [] ->
        names = Enum.map(p.array_to_array, fn {m, _} -> m.name() end)
        {:error, {:unsupported_codec, "array->array codecs #{inspect(names)} for #{dtype} data"}}

      true ->
        :ok
    end
  end

  # A v2 `order: "F"` array: one transpose reversing the axes.
  defp fortran?(%__MODULE__{array_to_array: [{Transpose, t}], chunk_spec: %{shape: shape}}) do
    n = tuple_size(shape)
    Transpose.configuration(t)["order"] == Enum.to_list((n - 1)..0//-1)
  end

  defp fortran?(_pipeline), do: false

  defp resolve_all(specs) when is_list(specs) and specs != [] do
    ExZarr.Result.map_ok(specs, fn spec ->
      with {:ok, module, config} <- Registry.resolve(spec), do: {:ok, {module, config}}
    end)
  end

  defp resolve_all(specs), do: {:error, {:invalid_codecs, specs}}

  # array->array* array->bytes bytes->bytes*, exactly one array->bytes.
  defp split_stages(resolved) do
    with :error <- ExZarr.Codec.split_order(resolved, fn {m, _} -> m.kind() end),
         do: {:error, {:invalid_codec_order, Enum.map(resolved, fn {m, _} -> m.name() end)}}
  end

  # Each array->array codec decodes to a whole chunk of the spec it sees, which must fit in
  # memory (the array->bytes codec checks its own).
  defp init_array_stages(a2a, chunk_spec) do
    Enum.reduce_while(a2a, {:ok, [], chunk_spec}, fn {module, config}, {:ok, acc, spec} ->
      size = DType.itemsize(spec.dtype) * Shape.product(spec.shape)

      with :ok <- Limits.check(:chunk, size),
           {:ok, state} <- module.init(config, spec) do
        {:cont, {:ok, [{module, state} | acc], module.resolve_spec(spec, state)}}
      else
        error -> {:halt, ExZarr.Codec.Config.wrap(error, module.name())}
      end
    end)
    |> case do
      {:ok, acc, spec} -> {:ok, Enum.reverse(acc), spec}
      error -> error
    end
  end

  defp init_serializer(module, config, spec) do
    with {:error, _} = error <- module.init(config, spec),
         do: ExZarr.Codec.Config.wrap(error, module.name())
  end

  # Bytes->bytes codecs see the array chunk's spec (blosc takes its typesize from the dtype)
  # with the byte size they must decode to, when it is known.
  defp init_bytes_stages(b2b, array_spec, size) do
    Enum.reduce_while(b2b, {:ok, [], size}, fn {module, config}, {:ok, acc, size} ->
      spec = %{array_spec | decoded_size: size}

      case module.init(config, spec) do
        {:ok, state} ->
          {:cont, {:ok, [{module, state} | acc], encoded_size(module, state, size)}}

        error ->
          {:halt, ExZarr.Codec.Config.wrap(error, module.name())}
      end
    end)
    |> case do
      {:ok, acc, _size} -> {:ok, Enum.reverse(acc)}
      error -> error
    end
  end

  # The byte size a stage produces when encoding, when it is fixed; nil otherwise.
  defp encoded_size(module, state, %{shape: shape, dtype: dtype}) do
    if DType.is_var_len(dtype),
      do: nil,
      else: encoded_size(module, state, DType.itemsize(dtype) * Shape.product(shape))
  end

  defp encoded_size(_module, _state, nil), do: nil

  defp encoded_size(module, state, size) when is_integer(size) do
    if function_exported?(module, :encoded_size, 2) do
      case module.encoded_size(size, state) do
        :variable -> nil
        n -> n
      end
    end
  end
end
