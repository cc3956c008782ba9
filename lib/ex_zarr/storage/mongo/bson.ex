defmodule ExZarr.Storage.Mongo.BSON do
  import Bitwise

  @max_depth 100
  @int32_range -0x80000000..0x7FFFFFFF

  @moduledoc """
  BSON (https://bsonspec.org), the document format of the MongoDB wire protocol: the subset
  of types a client meets, encoded from and decoded to plain Elixir terms.

  | BSON                         | Elixir                                                   |
  |------------------------------|----------------------------------------------------------|
  | document                     | a map (decoded); a map or a list of `{key, value}` pairs |
  |                              | with string keys, kept in order (encoded)                |
  | array                        | a list                                                   |
  | string                       | a UTF-8 binary                                           |
  | binary data                  | `{:binary, subtype, bytes}`                              |
  | double                       | a float; `:nan`, `:infinity`, `:neg_infinity`            |
  | int32, int64                 | an integer (encoded as int32 when it fits); `{:int64, n}`|
  | boolean, null                | `true`, `false`, `nil`                                   |
  | ObjectId                     | `{:object_id, <<_::96>>}`                                |
  | UTC datetime                 | `{:datetime, milliseconds since the epoch}`              |
  | timestamp                    | `{:timestamp, increment, seconds}`                       |
  | regular expression           | `{:regex, pattern, options}`                             |
  | decimal128                   | `{:decimal128, <<_::128>>}` (the raw bytes)              |
  | min key, max key, undefined  | `:min_key`, `:max_key`, `:undefined`                     |

  Decoding never raises: malformed bytes give `{:error, {:invalid_bson, what}}`. Documents
  nest at most #{@max_depth} deep. Encoding takes terms this client builds itself and raises
  `ArgumentError` on anything else.

      iex> alias ExZarr.Storage.Mongo.BSON
      iex> BSON.decode(IO.iodata_to_binary(BSON.encode([{"ping", 1}, {"$db", "admin"}])))
      {:ok, %{"ping" => 1, "$db" => "admin"}}
  """

  @type document :: map() | [{String.t(), value()}]
  @type value ::
          float()
          | integer()
          | String.t()
          | boolean()
          | nil
          | document()
          | list()
          | {:binary, 0..255, binary()}
          | {:int64, integer()}
          | {:object_id, <<_::96>>}
          | {:datetime, integer()}
          | {:timestamp, non_neg_integer(), non_neg_integer()}
          | {:regex, String.t(), String.t()}
          | {:decimal128, <<_::128>>}
          | :min_key
          | :max_key
          | :undefined
          | :nan
          | :infinity
          | :neg_infinity

  ## Encoding

  @doc "Encodes a document as iodata (binary data is passed through, not copied)."
  @spec encode(document()) :: iodata()
  def encode(document) do
    {body, size} = elements(pairs(document))
    [<<size + 5::little-32>>, body, 0]
  end

  defp pairs(map) when is_map(map), do: Map.to_list(map)
  defp pairs(list) when is_list(list), do: list

  defp elements(pairs) do
    Enum.map_reduce(pairs, 0, fn
      {key, value}, size when is_binary(key) ->
        {type, bytes} = value(value)
        element = [type, cstring(key) | bytes]
        {element, size + IO.iodata_length(element)}

      other, _size ->
        raise ArgumentError, "not a BSON document element: #{inspect(other)}"
    end)
  end

  defp cstring(string) do
    if String.valid?(string) and not String.contains?(string, <<0>>),
      do: [string, 0],
      else: raise(ArgumentError, "not a BSON key: #{inspect(string)}")
  end

  defp value(float) when is_float(float), do: {1, [<<float::little-float-64>>]}
  defp value(int) when is_integer(int) and int in @int32_range, do: {0x10, [<<int::little-32>>]}
  defp value(int) when is_integer(int), do: value({:int64, int})

  defp value({:int64, int})
       when is_integer(int) and int in -0x8000000000000000..0x7FFFFFFFFFFFFFFF,
       do: {0x12, [<<int::little-64>>]}

  defp value(string) when is_binary(string) do
    if String.valid?(string),
      do: {2, [<<byte_size(string) + 1::little-32>>, string, 0]},
      else: raise(ArgumentError, "not a UTF-8 string: #{inspect(string)}")
  end

  defp value(bool) when is_boolean(bool), do: {8, [if(bool, do: 1, else: 0)]}
  defp value(nil), do: {0x0A, []}
  defp value(:min_key), do: {0xFF, []}
  defp value(:max_key), do: {0x7F, []}
  defp value(:undefined), do: {6, []}
  defp value(:nan), do: {1, [<<0x7FF8000000000000::little-64>>]}
  defp value(:infinity), do: {1, [<<0x7FF0000000000000::little-64>>]}
  defp value(:neg_infinity), do: {1, [<<0xFFF0000000000000::little-64>>]}
  defp value(map) when is_map(map), do: {3, [encode(map)]}

  defp value([{key, _} | _] = document) when is_binary(key), do: {3, [encode(document)]}

  defp value(list) when is_list(list) do
    indexed = list |> Enum.with_index() |> Enum.map(fn {v, i} -> {Integer.to_string(i), v} end)
    {4, [encode(indexed)]}
  end

  defp value({:binary, subtype, bytes}) when subtype in 0..255 and is_binary(bytes),
    do: {5, [<<byte_size(bytes)::little-32, subtype>>, bytes]}

  defp value({:object_id, <<_::96>> = id}), do: {7, [id]}
  defp value({:datetime, ms}) when is_integer(ms), do: {9, [<<ms::little-signed-64>>]}

  defp value({:regex, pattern, options}) when is_binary(pattern) and is_binary(options),
    do: {0x0B, [cstring(pattern), cstring(options)]}

  defp value({:timestamp, increment, seconds}) when increment in 0..0xFFFFFFFF,
    do: {0x11, [<<increment::little-32, seconds::little-32>>]}

  defp value({:decimal128, <<_::128>> = bytes}), do: {0x13, [bytes]}
  defp value(other), do: raise(ArgumentError, "not a BSON value: #{inspect(other)}")

  ## Decoding

  @doc """
  Decodes one document that fills `binary` exactly: `{:ok, map}` or
  `{:error, {:invalid_bson, what}}`.
  """
  @spec decode(binary()) :: {:ok, map()} | {:error, {:invalid_bson, term()}}
  def decode(binary) when is_binary(binary) do
    case document(binary, 0) do
      {:ok, doc, <<>>} -> {:ok, doc}
      {:ok, _doc, _rest} -> {:error, {:invalid_bson, :trailing_bytes}}
      {:error, what} -> {:error, {:invalid_bson, what}}
    end
  end

  @doc """
  Decodes the document at the start of `binary`: `{:ok, map, rest}` or
  `{:error, {:invalid_bson, what}}`.
  """
  @spec decode_prefix(binary()) :: {:ok, map(), binary()} | {:error, {:invalid_bson, term()}}
  def decode_prefix(binary) when is_binary(binary) do
    case document(binary, 0) do
      {:ok, doc, rest} -> {:ok, doc, rest}
      {:error, what} -> {:error, {:invalid_bson, what}}
    end
  end

  defp document(binary, depth) do
    with {:ok, pairs, rest} <- pairs_of(binary, depth), do: {:ok, Map.new(pairs), rest}
  end

  # The elements of the document at the start of `binary`, in the stored order.
  defp pairs_of(_binary, depth) when depth > @max_depth, do: {:error, :too_deep}

  defp pairs_of(<<size::little-32, _::binary>> = binary, depth)
       when size >= 5 and size <= byte_size(binary) do
    case binary_part(binary, 4, size - 4) do
      <<body::binary-size(size - 5), 0>> ->
        with {:ok, pairs} <- elements_of(body, depth, []),
             do: {:ok, pairs, binary_part(binary, size, byte_size(binary) - size)}

      _ ->
        {:error, :missing_terminator}
    end
  end

  defp pairs_of(_binary, _depth), do: {:error, :bad_document_size}

  defp elements_of(<<>>, _depth, acc), do: {:ok, Enum.reverse(acc)}

  defp elements_of(<<type, rest::binary>>, depth, acc) do
    with {:ok, key, rest} <- key(rest),
         {:ok, value, rest} <- element(type, rest, depth) do
      elements_of(rest, depth, [{key, value} | acc])
    end
  end

  defp key(binary) do
    case :binary.match(binary, <<0>>) do
      {at, 1} ->
        key = binary_part(binary, 0, at)

        if String.valid?(key),
          do: {:ok, key, binary_part(binary, at + 1, byte_size(binary) - at - 1)},
          else: {:error, :invalid_utf8}

      :nomatch ->
        {:error, :unterminated_cstring}
    end
  end

  defp element(1, <<f::little-float-64, rest::binary>>, _), do: {:ok, f, rest}
  # NaN and the infinities, which Elixir floats do not have.
  defp element(1, <<bits::little-64, rest::binary>>, _), do: {:ok, special_float(bits), rest}

  defp element(2, <<size::little-32, rest::binary>>, _)
       when size >= 1 and size <= byte_size(rest) do
    case rest do
      <<string::binary-size(size - 1), 0, rest::binary>> ->
        if String.valid?(string), do: {:ok, string, rest}, else: {:error, :invalid_utf8}

      _ ->
        {:error, :unterminated_string}
    end
  end

  defp element(3, binary, depth), do: document(binary, depth + 1)

  defp element(4, binary, depth) do
    with {:ok, pairs, rest} <- pairs_of(binary, depth + 1),
         do: {:ok, Enum.map(pairs, &elem(&1, 1)), rest}
  end

  defp element(5, <<size::little-32, subtype, rest::binary>>, _) when size <= byte_size(rest) do
    <<bytes::binary-size(size), rest::binary>> = rest
    {:ok, {:binary, subtype, bytes}, rest}
  end

  defp element(6, rest, _), do: {:ok, :undefined, rest}
  defp element(7, <<id::binary-size(12), rest::binary>>, _), do: {:ok, {:object_id, id}, rest}
  defp element(8, <<0, rest::binary>>, _), do: {:ok, false, rest}
  defp element(8, <<1, rest::binary>>, _), do: {:ok, true, rest}
  defp element(9, <<ms::little-signed-64, rest::binary>>, _), do: {:ok, {:datetime, ms}, rest}
  defp element(0x0A, rest, _), do: {:ok, nil, rest}

  defp element(0x0B, binary, _) do
    with {:ok, pattern, rest} <- key(binary),
         {:ok, options, rest} <- key(rest),
         do: {:ok, {:regex, pattern, options}, rest}
  end

  defp element(0x10, <<i::little-signed-32, rest::binary>>, _), do: {:ok, i, rest}

  defp element(0x11, <<inc::little-32, seconds::little-32, rest::binary>>, _),
    do: {:ok, {:timestamp, inc, seconds}, rest}

  defp element(0x12, <<i::little-signed-64, rest::binary>>, _), do: {:ok, i, rest}
  defp element(0x13, <<d::binary-size(16), rest::binary>>, _), do: {:ok, {:decimal128, d}, rest}
  defp element(0x7F, rest, _), do: {:ok, :max_key, rest}
  defp element(0xFF, rest, _), do: {:ok, :min_key, rest}

  defp element(type, _binary, _)
       when type in [1, 2, 5, 7, 8, 9, 0x10, 0x11, 0x12, 0x13],
       do: {:error, {:bad_value, type}}

  defp element(type, _binary, _), do: {:error, {:unsupported_type, type}}

  defp special_float(bits) when (bits &&& 0xFFFFFFFFFFFFF) != 0, do: :nan
  defp special_float(bits) when bits >>> 63 == 1, do: :neg_infinity
  defp special_float(_bits), do: :infinity

  ## ObjectId

  @doc """
  A new ObjectId: the time in seconds, a random value drawn once per node and a counter, so
  that ids made on one node in one second sort in the order they were made.
  """
  @spec object_id() :: {:object_id, <<_::96>>}
  def object_id do
    {random, counter} = node_unique()
    count = :atomics.add_get(counter, 1, 1) &&& 0xFFFFFF
    {:object_id, <<System.os_time(:second)::32, random::binary-size(5), count::24>>}
  end

  defp node_unique do
    case :persistent_term.get(__MODULE__, nil) do
      nil ->
        unique = {:crypto.strong_rand_bytes(5), :atomics.new(1, signed: false)}
        :persistent_term.put(__MODULE__, unique)
        unique

      unique ->
        unique
    end
  end
end
