defmodule ExZarr.Storage.Mongo.Wire do
  @moduledoc """
  The framing of the MongoDB wire protocol's OP_MSG (opcode 2013, MongoDB 3.6 and later):
  a 16-byte header (`messageLength`, `requestID`, `responseTo`, `opCode`, little-endian
  int32s), 32 bits of flags and sections; this client sends and reads one body section (kind
  0: one BSON document) and skips document sequences (kind 1) and the optional CRC-32C
  checksum of replies.

      iex> alias ExZarr.Storage.Mongo.Wire
      iex> message = IO.iodata_to_binary(Wire.encode(7, [{"ping", 1}, {"$db", "admin"}]))
      iex> <<_::binary-size(16), body::binary>> = message
      iex> Wire.header(binary_part(message, 0, 16))
      {:ok, byte_size(message), 7, 0, 2013}
      iex> Wire.decode_body(body)
      {:ok, %{"ping" => 1, "$db" => "admin"}}
  """

  import Bitwise, only: [&&&: 2]

  alias ExZarr.Storage.Mongo.BSON

  @op_msg 2013
  @checksum_present 1
  @more_to_come 2

  @doc "An OP_MSG request carrying `document`, as iodata."
  @spec encode(integer(), BSON.document()) :: iodata()
  def encode(request_id, document) do
    body = BSON.encode(document)
    length = 16 + 4 + 1 + IO.iodata_length(body)

    [
      <<length::little-32, request_id::little-32, 0::little-32, @op_msg::little-32, 0::32, 0>>,
      body
    ]
  end

  @doc """
  Reads a message header: `{:ok, message_length, request_id, response_to, op_code}`.
  """
  @spec header(binary()) ::
          {:ok, non_neg_integer(), integer(), integer(), integer()} | {:error, term()}
  def header(<<length::little-32, request_id::little-32, response_to::little-32, op::little-32>>)
      when length >= 16,
      do: {:ok, length, request_id, response_to, op}

  def header(_bytes), do: {:error, {:protocol, :bad_header}}

  @doc """
  The body document of an OP_MSG reply, given the bytes after its header: `{:ok, map}` or
  `{:error, {:protocol, what}}`.
  """
  @spec decode_body(binary()) :: {:ok, map()} | {:error, {:protocol, term()}}
  def decode_body(<<flags::little-32, sections::binary>>) do
    sections =
      if (flags &&& @checksum_present) != 0 and byte_size(sections) >= 4,
        do: binary_part(sections, 0, byte_size(sections) - 4),
        else: sections

    if (flags &&& @more_to_come) != 0,
      do: {:error, {:protocol, :more_to_come}},
      else: body_section(sections, nil)
  end

  def decode_body(_bytes), do: {:error, {:protocol, :truncated}}

  defp body_section(<<>>, nil), do: {:error, {:protocol, :no_body}}
  defp body_section(<<>>, body), do: {:ok, body}

  defp body_section(<<0, rest::binary>>, nil) do
    case BSON.decode_prefix(rest) do
      {:ok, body, rest} -> body_section(rest, body)
      {:error, reason} -> {:error, {:protocol, reason}}
    end
  end

  defp body_section(<<1, size::little-32, rest::binary>>, body)
       when size >= 4 and size - 4 <= byte_size(rest),
       do: body_section(binary_part(rest, size - 4, byte_size(rest) - size + 4), body)

  defp body_section(_sections, _body), do: {:error, {:protocol, :bad_section}}
end
