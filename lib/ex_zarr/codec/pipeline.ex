defmodule ExZarr.Codec.Pipeline do
  @moduledoc """
  A chain of codecs configured for one chunk shape: array->array codecs, one array->bytes codec,
  then bytes->bytes codecs. Encoding runs them in that order, decoding in reverse.

  Data entering `encode/2` and leaving `decode/2` is a binary of packed elements in C order,
  little-endian, of the chunk's shape and data type.

      spec = %{shape: {2, 2}, dtype: :uint8, fill_value: 0, decoded_size: nil}
      {:ok, p} = ExZarr.Codec.Pipeline.new([%{name: "bytes", configuration: %{}}], spec)
      {:ok, <<1, 2, 3, 4>>} = ExZarr.Codec.Pipeline.decode(p, <<1, 2, 3, 4>>)
  """

  alias ExZarr.Codec.Registry
  alias ExZarr.Codecs.{Blosc, Bytes, Bz2, Gzip, Lz4, Zlib, Zstd}

  # Compressors whose decoder the output buffer NIF runs itself (c_src/outbuf.c).
  @native_decoders %{
    Zstd => :zstd,
    Blosc => :blosc,
    Lz4 => :lz4,
    Gzip => :gzip,
    Zlib => :zlib,
    Bz2 => :bz2
  }

  @enforce_keys [:array_to_array, :array_to_bytes, :bytes_to_bytes, :chunk_spec]
  defstruct [:array_to_array, :array_to_bytes, :bytes_to_bytes, :chunk_spec]

  @type stage :: {module(), ExZarr.Codec.state()}
  @type t :: %__MODULE__{
          array_to_array: [stage()],
          array_to_bytes: stage(),
          bytes_to_bytes: [stage()],
          chunk_spec: ExZarr.Codec.chunk_spec()
        }

  @doc """
  Builds the pipeline for chunks described by `chunk_spec`. Errors name the codec at fault:
  `{:error, {:unsupported_codec, name}}`, `{:error, {:invalid_codec_order, names}}`, or the
  codec's own configuration error.
  """
  @spec new([ExZarr.Codec.spec()], ExZarr.Codec.chunk_spec()) :: {:ok, t()} | {:error, term()}
  def new(specs, chunk_spec) do
    with {:ok, resolved} <- resolve_all(specs),
         {:ok, a2a, [{a2b, a2b_config} | b2b]} <- split_stages(resolved),
         {:ok, a2a_stages, bytes_spec} <- init_array_stages(a2a, chunk_spec),
         {:ok, a2b_state} <- a2b.init(a2b_config, bytes_spec),
         {:ok, b2b_stages} <-
           init_bytes_stages(b2b, bytes_spec, encoded_size(a2b, a2b_state, bytes_spec)) do
      {:ok,
       %__MODULE__{
         array_to_array: a2a_stages,
         array_to_bytes: {a2b, a2b_state},
         bytes_to_bytes: b2b_stages,
         chunk_spec: chunk_spec
       }}
    end
  end

  @doc "Encodes one chunk (packed C-order little-endian elements) to the bytes to store."
  @spec encode(t(), binary()) :: {:ok, iodata()} | {:error, term()}
  def encode(%__MODULE__{} = p, data) do
    stages = p.array_to_array ++ [p.array_to_bytes | p.bytes_to_bytes]
    run(stages, data, :encode)
  end

  @doc "Decodes stored bytes back to packed C-order little-endian elements."
  @spec decode(t(), binary()) :: {:ok, binary()} | {:error, term()}
  def decode(%__MODULE__{} = p, data) do
    stages = Enum.reverse(p.bytes_to_bytes) ++ [p.array_to_bytes | Enum.reverse(p.array_to_array)]

    case run(stages, data, :decode) do
      {:ok, decoded} -> {:ok, IO.iodata_to_binary(decoded)}
      error -> error
    end
  end

  @doc """
  How `ExZarr.Native.outbuf_put/4` can decode this pipeline's stored chunks in one native call
  (see `t:ExZarr.Native.outbuf_codec/0`): when it is a `bytes` codec alone or followed by one
  compressor the NIF knows, with no array->array codec. `nil` otherwise (decode with
  `decode/2`, then put the result as `:raw`).

      spec = %{shape: {2}, dtype: :float64, fill_value: 0.0, decoded_size: nil}
      codecs = [%{name: "bytes", configuration: %{"endian" => "big"}},
                %{name: "zstd", configuration: %{}}]
      {:ok, p} = ExZarr.Codec.Pipeline.new(codecs, spec)
      {:zstd, 8} = ExZarr.Codec.Pipeline.native_decoder(p)
  """
  @spec native_decoder(t()) :: ExZarr.Native.outbuf_codec() | nil
  def native_decoder(%__MODULE__{array_to_array: [], array_to_bytes: {Bytes, bytes}} = p) do
    case p.bytes_to_bytes do
      [] -> with_swap(:raw, bytes.swap)
      [{module, _state}] -> with_swap(Map.get(@native_decoders, module), bytes.swap)
      _ -> nil
    end
  end

  def native_decoder(%__MODULE__{}), do: nil

  defp with_swap(nil, _swap), do: nil
  defp with_swap(codec, nil), do: codec
  defp with_swap(codec, swap), do: {codec, swap}

  @doc """
  The pipeline as codec specs with every codec's complete configuration, as the codecs
  themselves state it (defaults made explicit, e.g. blosc's `typesize`): what metadata stores.
  """
  @spec specs(t()) :: [ExZarr.Codec.spec()]
  def specs(%__MODULE__{} = p) do
    for {module, state} <- p.array_to_array ++ [p.array_to_bytes | p.bytes_to_bytes],
        do: %{name: module.name(), configuration: module.configuration(state)}
  end

  defp run([], data, _direction), do: {:ok, data}

  defp run([{module, state} | rest], data, direction) do
    input = if direction == :decode, do: IO.iodata_to_binary(data), else: data

    case apply(module, direction, [input, state]) do
      {:ok, out} -> run(rest, out, direction)
      {:error, reason} -> {:error, {direction, module.name(), reason}}
    end
  end

  defp resolve_all(specs) when is_list(specs) and specs != [] do
    ExZarr.Result.map_ok(specs, fn spec ->
      with {:ok, module, config} <- Registry.resolve(spec), do: {:ok, {module, config}}
    end)
  end

  defp resolve_all(specs), do: {:error, {:invalid_codecs, specs}}

  # array->array* array->bytes bytes->bytes*, exactly one array->bytes.
  defp split_stages(resolved) do
    kinds = Enum.map(resolved, fn {module, _} -> module.kind() end)
    {a2a, rest} = Enum.split_while(resolved, fn {m, _} -> m.kind() == :array_to_array end)

    case Enum.map(rest, fn {m, _} -> m.kind() end) do
      [:array_to_bytes | b2b_kinds] ->
        if Enum.all?(b2b_kinds, &(&1 == :bytes_to_bytes)),
          do: {:ok, a2a, rest},
          else: invalid_order(resolved, kinds)

      _ ->
        invalid_order(resolved, kinds)
    end
  end

  defp invalid_order(resolved, _kinds),
    do: {:error, {:invalid_codec_order, Enum.map(resolved, fn {m, _} -> m.name() end)}}

  defp init_array_stages(a2a, chunk_spec) do
    Enum.reduce_while(a2a, {:ok, [], chunk_spec}, fn {module, config}, {:ok, acc, spec} ->
      case module.init(config, spec) do
        {:ok, state} -> {:cont, {:ok, [{module, state} | acc], module.resolve_spec(spec, state)}}
        {:error, reason} -> {:halt, {:error, {:invalid_codec, module.name(), reason}}}
      end
    end)
    |> case do
      {:ok, acc, spec} -> {:ok, Enum.reverse(acc), spec}
      error -> error
    end
  end

  # Bytes->bytes codecs see the array chunk's spec (blosc takes its typesize from the dtype)
  # with the byte size they must decode to, when it is known.
  defp init_bytes_stages(b2b, array_spec, size) do
    Enum.reduce_while(b2b, {:ok, [], size}, fn {module, config}, {:ok, acc, size} ->
      spec = %{array_spec | decoded_size: size}

      case module.init(config, spec) do
        {:ok, state} ->
          {:cont, {:ok, [{module, state} | acc], encoded_size(module, state, size)}}

        {:error, reason} ->
          {:halt, {:error, {:invalid_codec, module.name(), reason}}}
      end
    end)
    |> case do
      {:ok, acc, _size} -> {:ok, Enum.reverse(acc)}
      error -> error
    end
  end

  # The byte size a stage produces when encoding, when it is fixed; nil otherwise.
  defp encoded_size(module, state, %{shape: shape, dtype: dtype}) do
    encoded_size(module, state, ExZarr.DType.itemsize(dtype) * ExZarr.Shape.product(shape))
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
