defmodule ExZarr.Storage.HTTP.Connection do
  @moduledoc false
  # One HTTP/1.1 client connection on `:gen_tcp` (or `:ssl` for https): opening it and one
  # request/response exchange at a time on it. `ExZarr.Storage.HTTP.Pool` keeps connections
  # alive between requests; `ExZarr.Storage.HTTP.request/5` drives both.
  #
  # The socket is passive (`active: false`) with `nodelay` (a request leaves at once, no Nagle
  # delay). A request body is sent as the iodata it is given, so chunk data is never joined
  # into a new binary. The socket parses the response head itself (`packet: :http_bin`), so no
  # body byte comes along with it, and a body with a `Content-Length` is then received with one
  # `recv` of exactly that length into one binary, no copy; chunked bodies and bodies delimited
  # by the end of the connection are read too. A body larger than `ExZarr.Limits.max_bytes/0`
  # (by its `Content-Length`, before any of it is read, or as it comes) and a head of more than
  # 1,000 header lines are errors, so a hostile server cannot exhaust memory.
  #
  #     {:ok, conn} = Connection.open("http", "127.0.0.1", 9000, 5_000, [], 30_000)
  #     {:ok, 200, headers, body, keep_alive?} =
  #       Connection.request(conn, :get, "/b/k", [{"host", "127.0.0.1:9000"}], nil, 30_000)
  #
  # Errors are `{:error, reason}` with the socket closed; `{:error, {:unanswered, reason}}`
  # says the connection was closed or reset before the answer's status line came (on a reused
  # keep-alive connection: the server had closed it while it was idle), so the request can be sent again on a new one.

  @enforce_keys [:transport, :socket]
  defstruct [:transport, :socket]

  @type t :: %__MODULE__{transport: :gen_tcp | :ssl, socket: term()}
  @type headers :: [{String.t(), String.t()}]

  @socket_options [:binary, active: false, packet: :http_bin, nodelay: true, keepalive: true]
  # The longest chunk-size or trailer line accepted (the socket bounds the head's lines).
  @max_line 65_536
  @max_recv 32 * 1024 * 1024
  # The most header lines one answer may have.
  @max_headers 1_000

  @doc """
  Connects to `host:port` (`scheme` `"http"` or `"https"`; `ssl` are the `:ssl` options for
  https), giving up after `connect_timeout` ms. `send_timeout` (ms) bounds a send that the
  server does not read. A port outside 1..65535 (from a URL or a redirect) is
  `{:error, {:invalid_port, port}}` (`:gen_tcp` exits on it).
  """
  @spec open(String.t(), String.t(), :inet.port_number(), timeout(), keyword(), timeout()) ::
          {:ok, t()} | {:error, term()}
  def open(_scheme, _host, port, _connect_timeout, _ssl, _send_timeout)
      when not is_integer(port) or port not in 1..65_535,
      do: {:error, {:invalid_port, port}}

  def open(scheme, host, port, connect_timeout, ssl, send_timeout) do
    {address, family} = address(host)
    options = family ++ [send_timeout: send_timeout, send_timeout_close: true] ++ @socket_options

    result =
      case scheme do
        "https" -> :ssl.connect(address, port, options ++ ssl, connect_timeout)
        _ -> :gen_tcp.connect(address, port, options, connect_timeout)
      end

    case result do
      {:ok, socket} -> {:ok, %__MODULE__{transport: transport(scheme), socket: socket}}
      {:error, reason} -> {:error, reason}
    end
  end

  defp transport("https"), do: :ssl
  defp transport(_scheme), do: :gen_tcp

  # An IP literal as a tuple (an IPv6 one needs :inet6), a name as a charlist.
  defp address(host) do
    name = String.to_charlist(host)

    case :inet.parse_address(name) do
      {:ok, {_, _, _, _} = ip} -> {ip, []}
      {:ok, ip} -> {ip, [:inet6]}
      {:error, _} -> {name, []}
    end
  end

  @doc """
  Closes the connection. Never fails: a TLS connection whose process is already gone (the
  `ssl` application restarted it, say) makes `:ssl.close/1` exit, and there is nothing left to
  close then.
  """
  @spec close(t()) :: :ok
  def close(%__MODULE__{transport: transport, socket: socket}) do
    transport.close(socket)
    :ok
  catch
    :exit, _reason -> :ok
    :error, _reason -> :ok
  end

  @doc "Makes `pid` the owner of the socket (the connection closes when its owner exits)."
  @spec give_to(t(), pid()) :: :ok | {:error, term()}
  def give_to(%__MODULE__{transport: transport, socket: socket}, pid),
    do: transport.controlling_process(socket, pid)

  @doc """
  Sends one request (`target` is the path and query; `body` iodata or nil for none; the
  headers are sent as given, `Content-Length` included) and reads the answer within
  `timeout` ms. Returns the status, the headers (lowercase names), the body and whether the
  connection can carry another request. On an error the connection is closed.
  """
  @spec request(t(), atom(), iodata(), headers(), iodata() | nil, timeout()) ::
          {:ok, non_neg_integer(), headers(), binary(), boolean()}
          | {:error, term()}
  def request(%__MODULE__{} = conn, method, target, headers, body, timeout) do
    deadline = System.monotonic_time(:millisecond) + timeout

    head = [
      method_name(method),
      " ",
      target,
      " HTTP/1.1\r\n",
      Enum.map(headers, fn {name, value} -> [name, ": ", value, "\r\n"] end),
      "\r\n"
    ]

    data = if body == nil, do: head, else: [head | body]

    result =
      case conn.transport.send(conn.socket, data) do
        :ok -> read_response(conn, method, deadline, true)
        {:error, reason} -> {:error, unanswered(reason)}
      end

    with {:error, _} <- result, do: close_after(conn, result)
  end

  defp close_after(conn, error) do
    close(conn)
    error
  end

  defp method_name(:get), do: "GET"
  defp method_name(:head), do: "HEAD"
  defp method_name(:put), do: "PUT"
  defp method_name(:post), do: "POST"
  defp method_name(:delete), do: "DELETE"

  # The head is parsed by the socket itself (packet: :http_bin, the mode a connection rests
  # in), one line per recv, so it never takes body bytes along; the body is then read in raw
  # mode, and the socket goes back to http_bin for the next answer.
  defp read_response(conn, method, deadline, first?) do
    case recv(conn, 0, deadline) do
      {:ok, {:http_response, version, status, _reason}} ->
        with {:ok, headers} <- read_headers(conn, deadline, []) do
          if status in 100..199,
            do: read_response(conn, method, deadline, false),
            else: read_body(conn, method, version, status, headers, deadline)
        end

      {:ok, _other} ->
        {:error, {:bad_response, :status_line}}

      {:error, reason} when first? ->
        {:error, unanswered(reason)}

      {:error, reason} ->
        {:error, reason}
    end
  end

  # A silent server is a timeout, not a stale connection: only a closed or reset one is.
  defp unanswered(reason) when reason in [:closed, :econnreset, :enotconn, :epipe],
    do: {:unanswered, reason}

  defp unanswered(reason), do: reason

  defp read_headers(_conn, _deadline, acc) when length(acc) >= @max_headers,
    do: {:error, {:bad_response, :too_many_headers}}

  defp read_headers(conn, deadline, acc) do
    case recv(conn, 0, deadline) do
      {:ok, {:http_header, _, name, _, value}} ->
        read_headers(conn, deadline, [{header_name(name), value} | acc])

      {:ok, :http_eoh} ->
        {:ok, Enum.reverse(acc)}

      {:ok, _other} ->
        {:error, {:bad_response, :header}}

      {:error, reason} ->
        {:error, reason}
    end
  end

  defp header_name(name) when is_atom(name), do: name |> Atom.to_string() |> lowercase()
  defp header_name(name), do: lowercase(name)

  defp lowercase(text), do: String.downcase(text, :ascii)

  defp read_body(conn, method, version, status, headers, deadline) do
    keep_alive? = version == {1, 1} and not closing?(headers)
    length = content_length(headers)

    cond do
      method == :head or status in [204, 304] or length == 0 ->
        {:ok, status, headers, <<>>, keep_alive?}

      chunked?(headers) ->
        with :ok <- set_packet(conn, :raw),
             {:ok, body, rest} <- read_chunks(conn, <<>>, deadline, [], 0),
             :ok <- set_packet(conn, :http_bin),
             do: {:ok, status, headers, body, keep_alive? and rest == <<>>}

      length == :invalid ->
        {:error, {:bad_response, :content_length}}

      length ->
        with :ok <- ExZarr.Limits.check(:http_body, length),
             :ok <- set_packet(conn, :raw),
             {:ok, body, <<>>} <- read_exact(conn, <<>>, length, deadline),
             :ok <- set_packet(conn, :http_bin),
             do: {:ok, status, headers, body, keep_alive?}

      true ->
        with :ok <- set_packet(conn, :raw),
             {:ok, body} <- read_to_close(conn, [], 0, deadline),
             do: {:ok, status, headers, body, false}
    end
  end

  defp set_packet(%__MODULE__{transport: :gen_tcp, socket: socket}, mode),
    do: :inet.setopts(socket, packet: mode)

  defp set_packet(%__MODULE__{transport: :ssl, socket: socket}, mode),
    do: :ssl.setopts(socket, packet: mode)

  defp closing?(headers), do: token?(headers, "connection", "close")
  defp chunked?(headers), do: token?(headers, "transfer-encoding", "chunked")

  defp token?(headers, name, token) do
    case List.keyfind(headers, name, 0) do
      {_, value} -> value |> lowercase() |> String.contains?(token)
      nil -> false
    end
  end

  # nil without the header; `:invalid` unless every Content-Length header holds the same
  # decimal number (a lying or ambiguous length must not decide where the body ends).
  defp content_length(headers) do
    lengths =
      for {"content-length", value} <- headers do
        value = String.trim(value)
        if value != "" and digits?(value), do: String.to_integer(value), else: :invalid
      end

    case Enum.uniq(lengths) do
      [] -> nil
      [length] -> length
      _ -> :invalid
    end
  end

  defp digits?(text), do: for(<<c <- text>>, reduce: true, do: (ok -> ok and c in ?0..?9))

  # `length` bytes: those already in `buffer`, then one recv of exactly the rest (in parts
  # of @max_recv bytes beyond that, the most the socket driver takes at once).
  defp read_exact(_conn, buffer, length, _deadline) when byte_size(buffer) >= length do
    <<data::binary-size(length), rest::binary>> = buffer
    {:ok, data, rest}
  end

  defp read_exact(conn, buffer, length, deadline) when length - byte_size(buffer) > @max_recv do
    with {:ok, parts} <- recv_parts(conn, length - byte_size(buffer), deadline, [buffer]),
         do: {:ok, IO.iodata_to_binary(parts), <<>>}
  end

  defp read_exact(conn, buffer, length, deadline) do
    with {:ok, data} <- recv(conn, length - byte_size(buffer), deadline) do
      if buffer == <<>>, do: {:ok, data, <<>>}, else: {:ok, buffer <> data, <<>>}
    end
  end

  defp recv_parts(_conn, 0, _deadline, acc), do: {:ok, Enum.reverse(acc)}

  defp recv_parts(conn, length, deadline, acc) do
    with {:ok, data} <- recv(conn, min(length, @max_recv), deadline),
         do: recv_parts(conn, length - byte_size(data), deadline, [data | acc])
  end

  # `total`: the bytes of the chunks read so far.
  defp read_chunks(conn, buffer, deadline, acc, total) do
    with {:ok, line, rest} <- read_line(conn, buffer, deadline),
         {:ok, size} <- chunk_size(line),
         :ok <- ExZarr.Limits.check(:http_body, total + size) do
      if size == 0 do
        with {:ok, rest} <- skip_trailers(conn, rest, deadline),
             do: {:ok, IO.iodata_to_binary(Enum.reverse(acc)), rest}
      else
        with {:ok, data, rest} <- read_exact(conn, rest, size + 2, deadline) do
          case data do
            <<chunk::binary-size(size), "\r\n">> ->
              read_chunks(conn, rest, deadline, [chunk | acc], total + size)

            _ ->
              {:error, {:bad_response, :chunk}}
          end
        end
      end
    end
  end

  defp chunk_size(line) do
    [hex | _extensions] = :binary.split(line, ";")

    case Integer.parse(String.trim(hex), 16) do
      {size, ""} when size >= 0 -> {:ok, size}
      _ -> {:error, {:bad_response, :chunk_size}}
    end
  end

  defp skip_trailers(conn, buffer, deadline) do
    with {:ok, line, rest} <- read_line(conn, buffer, deadline) do
      if line == <<>>, do: {:ok, rest}, else: skip_trailers(conn, rest, deadline)
    end
  end

  defp read_line(conn, buffer, deadline) do
    case :binary.split(buffer, "\r\n") do
      [line, rest] ->
        {:ok, line, rest}

      [_] when byte_size(buffer) > @max_line ->
        {:error, {:bad_response, :line_too_long}}

      [_] ->
        with {:ok, data} <- recv(conn, 0, deadline),
             do: read_line(conn, buffer <> data, deadline)
    end
  end

  defp read_to_close(conn, acc, size, deadline) do
    case recv(conn, 0, deadline) do
      {:ok, data} ->
        size = size + byte_size(data)

        with :ok <- ExZarr.Limits.check(:http_body, size),
             do: read_to_close(conn, [acc | data], size, deadline)

      {:error, :closed} ->
        {:ok, IO.iodata_to_binary(acc)}

      {:error, reason} ->
        {:error, reason}
    end
  end

  defp recv(%__MODULE__{transport: transport, socket: socket}, length, deadline) do
    case deadline - System.monotonic_time(:millisecond) do
      left when left > 0 -> transport.recv(socket, length, left)
      _ -> {:error, :timeout}
    end
  end
end
