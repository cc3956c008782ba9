defmodule ExZarr.Storage.Mongo.SCRAM do
  @moduledoc """
  The client side of SCRAM-SHA-256 (RFC 5802, RFC 7677), as MongoDB uses it in `saslStart`
  and `saslContinue`: pure functions from the messages to the next one, with `:crypto`'s
  PBKDF2 and HMAC. The password is prepared with the SASLprep rules that matter for real
  passwords (RFC 4013: non-ASCII spaces become spaces, characters mapped to nothing are
  dropped, NFKC; control characters are refused).

      iex> alias ExZarr.Storage.Mongo.SCRAM
      iex> {first, state} = SCRAM.client_first("user", "rOprNGfwEbeRWgbNEkqO")
      iex> first
      "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
      iex> server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0," <>
      ...>   "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
      iex> {:ok, final, state} = SCRAM.client_final(state, server_first, "pencil")
      iex> final == "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0," <>
      ...>   "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
      true
      iex> SCRAM.verify_server_final(state, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
      :ok
  """

  # A server asking for more iterations than this is refused rather than obeyed.
  @max_iterations 10_000_000
  @gs2_header "n,,"

  @typedoc "What the exchange carries from one message to the next."
  @opaque state :: map()

  @doc "A fresh client nonce (24 random bytes, base64)."
  @spec nonce() :: String.t()
  def nonce, do: Base.encode64(:crypto.strong_rand_bytes(24))

  @doc "The client-first message for `username` and the state for `client_final/3`."
  @spec client_first(String.t(), String.t()) :: {String.t(), state()}
  def client_first(username, nonce) do
    bare = "n=" <> escape(username) <> ",r=" <> nonce
    {@gs2_header <> bare, %{nonce: nonce, client_first_bare: bare}}
  end

  # RFC 5802: "=" and "," in a user name are written "=3D" and "=2C".
  defp escape(name), do: name |> String.replace("=", "=3D") |> String.replace(",", "=2C")

  @doc """
  The client-final message (with the proof) answering the server-first message, or
  `{:error, {:scram, what}}` when the server's message is malformed or does not extend our
  nonce.
  """
  @spec client_final(state(), String.t(), String.t()) ::
          {:ok, String.t(), state()} | {:error, {:scram, term()}}
  def client_final(state, server_first, password) do
    with {:ok, %{"r" => nonce, "s" => salt64, "i" => iterations}} <- attributes(server_first),
         true <- String.starts_with?(nonce, state.nonce) or {:error, {:scram, :nonce_mismatch}},
         {:ok, salt} <- decode64(salt64),
         {:ok, iterations} <- iterations(iterations),
         {:ok, password} <- saslprep(password) do
      salted = :crypto.pbkdf2_hmac(:sha256, password, salt, iterations, 32)
      client_key = hmac(salted, "Client Key")
      without_proof = "c=" <> Base.encode64(@gs2_header) <> ",r=" <> nonce
      auth_message = Enum.join([state.client_first_bare, server_first, without_proof], ",")
      signature = hmac(:crypto.hash(:sha256, client_key), auth_message)
      proof = :crypto.exor(client_key, signature)
      server_signature = hmac(hmac(salted, "Server Key"), auth_message)

      {:ok, without_proof <> ",p=" <> Base.encode64(proof),
       Map.put(state, :server_signature, server_signature)}
    else
      {:ok, _attributes} -> {:error, {:scram, :bad_server_first}}
      {:error, _} = error -> error
    end
  end

  @doc """
  Checks the server-final message: `:ok` when it carries the signature only a server that
  knows the password can make.
  """
  @spec verify_server_final(state(), String.t()) :: :ok | {:error, {:scram, term()}}
  def verify_server_final(state, server_final) do
    case attributes(server_final) do
      {:ok, %{"e" => error}} ->
        {:error, {:scram, {:server_error, error}}}

      {:ok, %{"v" => signature64}} ->
        case decode64(signature64) do
          {:ok, signature} ->
            if byte_size(signature) == 32 and
                 :crypto.hash_equals(signature, state.server_signature),
               do: :ok,
               else: {:error, {:scram, :bad_server_signature}}

          error ->
            error
        end

      _ ->
        {:error, {:scram, :bad_server_final}}
    end
  end

  defp hmac(key, data), do: :crypto.mac(:hmac, :sha256, key, data)

  # "k=v,k=v" into a map (values may contain "=").
  defp attributes(message) when is_binary(message) do
    message
    |> String.split(",")
    |> Enum.reduce_while({:ok, %{}}, fn
      <<key::binary-size(1), "=", value::binary>>, {:ok, acc} ->
        {:cont, {:ok, Map.put(acc, key, value)}}

      _, _ ->
        {:halt, {:error, {:scram, :malformed_message}}}
    end)
  end

  defp attributes(_message), do: {:error, {:scram, :malformed_message}}

  defp decode64(text) do
    case Base.decode64(text) do
      {:ok, bytes} -> {:ok, bytes}
      :error -> {:error, {:scram, :bad_base64}}
    end
  end

  defp iterations(text) do
    case Integer.parse(text) do
      {n, ""} when n >= 1 and n <= @max_iterations -> {:ok, n}
      _ -> {:error, {:scram, {:bad_iteration_count, text}}}
    end
  end

  @doc """
  The password prepared with SASLprep (RFC 4013) for the cases real passwords meet: ASCII
  passwords are unchanged; non-ASCII spaces become U+0020, characters "commonly mapped to
  nothing" are removed, the result is NFKC-normalized; control characters are an error.

      iex> ExZarr.Storage.Mongo.SCRAM.saslprep("I\\u00ADX")
      {:ok, "IX"}
      iex> ExZarr.Storage.Mongo.SCRAM.saslprep("\\u2168")
      {:ok, "IX"}
      iex> ExZarr.Storage.Mongo.SCRAM.saslprep("a\\u0007")
      {:error, {:scram, :prohibited_password_character}}
  """
  @spec saslprep(String.t()) :: {:ok, String.t()} | {:error, {:scram, term()}}
  def saslprep(password) do
    if String.valid?(password), do: prepare(password), else: {:error, {:scram, :invalid_utf8}}
  end

  defp prepare(password) do
    mapped =
      for <<c::utf8 <- password>>, not nothing?(c), into: "" do
        if space?(c), do: " ", else: <<c::utf8>>
      end

    prepared = :unicode.characters_to_nfkc_binary(mapped)

    if is_binary(prepared) and not Enum.any?(String.to_charlist(prepared), &prohibited?/1),
      do: {:ok, prepared},
      else: {:error, {:scram, :prohibited_password_character}}
  end

  # RFC 3454 B.1
  defp nothing?(c),
    do:
      c in [0xAD, 0x34F, 0x1806, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF] or
        c in 0x180B..0x180D or c in 0xFE00..0xFE0F

  # RFC 3454 C.1.2
  defp space?(c),
    do: c in [0xA0, 0x1680, 0x202F, 0x205F, 0x3000] or c in 0x2000..0x200A

  # RFC 3454 C.2 (control characters), C.3 (private use), C.8/C.9 (bidi, tagging) in part
  defp prohibited?(c),
    do:
      c < 0x20 or c in 0x7F..0x9F or c in 0xE000..0xF8FF or c in 0xFFF9..0xFFFD or
        c in 0x200E..0x200F or c in 0x202A..0x202E or c in 0xE0001..0xE007F
end
