defmodule ExZarr.Codecs.Base64 do
  @moduledoc """
  numcodecs Base64 (v3 `numcodecs.base64`, v2 `base64`), bytes->bytes: the standard base64
  alphabet with `=` padding and no line breaks, as Python's `base64.standard_b64encode`.
  No configuration. Decoding is strict (whitespace aside): a character outside the alphabet,
  a wrong padding, or a decoded size other than the chunk's is an error.

      iex> {:ok, s} = ExZarr.Codecs.Base64.init(%{}, %{decoded_size: 5})
      iex> {:ok, enc} = ExZarr.Codecs.Base64.encode("hello", s)
      iex> IO.iodata_to_binary(enc)
      "aGVsbG8="
      iex> ExZarr.Codecs.Base64.decode("aGVsbG8=", s)
      {:ok, "hello"}
      iex> ExZarr.Codecs.Base64.decode("aGVsbG8", s)
      {:error, {:base64, :invalid}}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.base64",
    v2_id: "base64",
    kind: :bytes_to_bytes,
    keys: []

  alias ExZarr.Codecs.Numcodecs

  @impl true
  def init(_config, spec) do
    {max, exact} = Numcodecs.decode_bounds(spec)
    {:ok, %{max: max, exact: exact}}
  end

  @impl true
  def encode(data, _s), do: {:ok, data |> IO.iodata_to_binary() |> Base.encode64()}

  @impl true
  def decode(data, %{max: max, exact: exact}) do
    case Base.decode64(data, ignore: :whitespace) do
      {:ok, bytes} when byte_size(bytes) == max or (not exact and byte_size(bytes) <= max) ->
        {:ok, bytes}

      {:ok, bytes} ->
        {:error, {:base64, {:decoded_size, byte_size(bytes), max}}}

      :error ->
        {:error, {:base64, :invalid}}
    end
  end

  @impl true
  def configuration(_s), do: %{}
end
