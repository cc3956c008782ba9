defmodule ExZarr.Storage.Mongo.Connection do
  @moduledoc """
  One connection to a MongoDB server: a passive `:gen_tcp` socket on which commands go as
  OP_MSG requests (`ExZarr.Storage.Mongo.Wire`), one at a time. Opening it runs the `hello`
  handshake (which gives the server's size limits) and, with credentials, SCRAM-SHA-256
  (`ExZarr.Storage.Mongo.SCRAM`).

      {:ok, conn} = Connection.open("127.0.0.1", 27017, connect_timeout: 5_000, timeout: 30_000)
      {:ok, %{"ok" => 1.0}} = Connection.command(conn, "admin", [{"ping", 1}], 30_000)

  Errors: `{:mongo_connection, reason}` when the socket failed, timed out or carried
  something that is not a reply to the request (the connection must then be closed);
  `{:mongo_error, code, message}` when the server refused the command (the connection is
  fine). Passwords never appear in either.
  """

  import Bitwise, only: [&&&: 2]

  alias ExZarr.Storage.Mongo.{SCRAM, Wire}

  @enforce_keys [:socket]
  defstruct [:socket, max_bson_size: 16 * 1024 * 1024, max_message_size: 48_000_000]

  @type t :: %__MODULE__{
          socket: :gen_tcp.socket(),
          max_bson_size: pos_integer(),
          max_message_size: pos_integer()
        }

  @typedoc "A user name, a function returning the password, and the database to log in to."
  @type credentials :: {String.t(), (() -> String.t()), String.t()} | nil

  @socket_options [:binary, active: false, packet: :raw, nodelay: true, keepalive: true]
  # A reply larger than this is refused as a protocol error (servers send at most 48 MB).
  @max_reply 64 * 1024 * 1024
  @command_not_found 59

  @doc """
  Connects to `host:port` and runs the handshake and the login. Options: `:connect_timeout`
  and `:timeout` (ms, each exchange), `:credentials`.
  """
  @spec open(String.t(), :inet.port_number(), keyword()) :: {:ok, t()} | {:error, term()}
  def open(host, port, opts) do
    timeout = Keyword.fetch!(opts, :timeout)
    # an IPv6 literal (from "[::1]" in a URL) needs :inet6; names and IPv4 resolve as they are
    family = if String.contains?(host, ":"), do: [:inet6], else: []
    options = family ++ [send_timeout: timeout, send_timeout_close: true] ++ @socket_options
    connect_timeout = Keyword.fetch!(opts, :connect_timeout)

    case :gen_tcp.connect(String.to_charlist(host), port, options, connect_timeout) do
      {:ok, socket} ->
        conn = %__MODULE__{socket: socket}

        with {:ok, conn} <- handshake(conn, timeout),
             :ok <- login(conn, Keyword.get(opts, :credentials), timeout) do
          {:ok, conn}
        else
          error ->
            close(conn)
            error
        end

      {:error, reason} ->
        {:error, {:mongo_connection, reason}}
    end
  end

  @doc "Closes the connection."
  @spec close(t()) :: :ok
  def close(%__MODULE__{socket: socket}), do: :gen_tcp.close(socket)

  @doc "Makes `pid` the owner of the socket (it closes when its owner exits)."
  @spec give_to(t(), pid()) :: :ok | {:error, term()}
  def give_to(%__MODULE__{socket: socket}, pid), do: :gen_tcp.controlling_process(socket, pid)

  # `hello` (MongoDB 4.4+, FerretDB), `isMaster` before it; the reply has the size limits.
  defp handshake(conn, timeout) do
    reply =
      case command(conn, "admin", [{"hello", 1}], timeout) do
        {:error, {:mongo_error, @command_not_found, _}} ->
          command(conn, "admin", [{"isMaster", 1}], timeout)

        other ->
          other
      end

    with {:ok, hello} <- reply do
      {:ok,
       %{
         conn
         | max_bson_size: limit(hello, "maxBsonObjectSize", conn.max_bson_size),
           max_message_size: limit(hello, "maxMessageSizeBytes", conn.max_message_size)
       }}
    end
  end

  defp limit(hello, field, default) do
    case hello[field] do
      n when is_integer(n) and n > 0 -> n
      _ -> default
    end
  end

  defp login(_conn, nil, _timeout), do: :ok

  defp login(conn, {username, password, source}, timeout) do
    {first, state} = SCRAM.client_first(username, SCRAM.nonce())

    start = [
      {"saslStart", 1},
      {"mechanism", "SCRAM-SHA-256"},
      {"payload", {:binary, 0, first}},
      {"autoAuthorize", 1},
      {"options", [{"skipEmptyExchange", true}]}
    ]

    with {:ok, reply} <- command(conn, source, start, timeout),
         {:ok, id, server_first} <- sasl_payload(reply),
         {:ok, final, state} <- SCRAM.client_final(state, server_first, password.()),
         {:ok, reply} <- sasl_continue(conn, source, id, final, timeout),
         {:ok, _id, server_final} <- sasl_payload(reply),
         :ok <- SCRAM.verify_server_final(state, server_final) do
      finish_login(conn, source, id, reply, timeout)
    else
      {:error, {:mongo_error, code, message}} -> {:error, {:mongo_auth_failed, code, message}}
      {:error, _} = error -> error
    end
  end

  # A server that does not skip the empty exchange wants one more round.
  defp finish_login(_conn, _source, _id, %{"done" => true}, _timeout), do: :ok

  defp finish_login(conn, source, id, _reply, timeout) do
    case sasl_continue(conn, source, id, "", timeout) do
      {:ok, %{"done" => true}} -> :ok
      {:ok, _} -> {:error, {:mongo_auth_failed, 0, "the SCRAM exchange did not finish"}}
      error -> error
    end
  end

  defp sasl_continue(conn, source, id, payload, timeout) do
    continue = [{"saslContinue", 1}, {"conversationId", id}, {"payload", {:binary, 0, payload}}]
    command(conn, source, continue, timeout)
  end

  defp sasl_payload(%{"conversationId" => id, "payload" => {:binary, _, payload}}),
    do: {:ok, id, payload}

  defp sasl_payload(%{"conversationId" => id, "payload" => payload}) when is_binary(payload),
    do: {:ok, id, payload}

  defp sasl_payload(_reply), do: {:error, {:mongo_auth_failed, 0, "malformed SASL reply"}}

  @doc """
  Runs a command (a document whose first element names it) on `database`: `{:ok, reply}`
  when the server answers `ok: 1` without write errors. `timeout` (ms) bounds the whole
  exchange.
  """
  @spec command(t(), String.t(), [{String.t(), term()}], timeout()) ::
          {:ok, map()} | {:error, term()}
  def command(%__MODULE__{} = conn, database, document, timeout) do
    deadline = System.monotonic_time(:millisecond) + timeout
    request_id = :erlang.unique_integer([:positive]) &&& 0x7FFFFFFF
    message = Wire.encode(request_id, document ++ [{"$db", database}])

    with :ok <- size_ok(conn, message),
         :ok <- socket(:gen_tcp.send(conn.socket, message)),
         {:ok, header} <- recv(conn, 16, deadline),
         {:ok, length, _id, ^request_id, 2013} <- Wire.header(header),
         true <- length <= @max_reply or {:error, {:mongo_connection, :reply_too_large}},
         {:ok, body} <- recv(conn, length - 16, deadline),
         {:ok, reply} <- protocol(Wire.decode_body(body)) do
      result(reply)
    else
      {:ok, _length, _id, _response_to, _op} -> {:error, {:mongo_connection, :unexpected_reply}}
      {:error, {:protocol, _} = reason} -> {:error, {:mongo_connection, reason}}
      {:error, _} = error -> error
    end
  end

  defp size_ok(conn, message) do
    if IO.iodata_length(message) <= conn.max_message_size,
      do: :ok,
      else: {:error, {:mongo_error, 10334, "the command is larger than the server accepts"}}
  end

  defp recv(_conn, 0, _deadline), do: {:ok, <<>>}

  defp recv(conn, length, deadline) do
    left = max(deadline - System.monotonic_time(:millisecond), 0)
    socket(:gen_tcp.recv(conn.socket, length, left))
  end

  defp socket(:ok), do: :ok
  defp socket({:ok, data}), do: {:ok, data}
  defp socket({:error, reason}), do: {:error, {:mongo_connection, reason}}

  defp protocol({:ok, reply}), do: {:ok, reply}
  defp protocol({:error, reason}), do: {:error, {:mongo_connection, reason}}

  defp result(%{"ok" => ok} = reply) when ok in [1, 1.0] do
    case reply do
      %{"writeErrors" => [%{} = first | _]} -> {:error, server_error(first)}
      %{"writeConcernError" => %{} = error} -> {:error, server_error(error)}
      _ -> {:ok, reply}
    end
  end

  defp result(reply), do: {:error, server_error(reply)}

  defp server_error(doc) do
    code = if is_integer(doc["code"]), do: doc["code"], else: 0
    message = if is_binary(doc["errmsg"]), do: doc["errmsg"], else: "command failed"
    {:mongo_error, code, message}
  end
end
