defmodule ExZarr.Test.ScriptedTCP do
  @moduledoc false
  # An HTTP/1.1 server scripted byte by byte, per connection, for the tests of the HTTP client
  # (ExZarr.Storage.HTTP, .Connection, .Pool).

  alias ExZarr.Storage.HTTP

  @doc """
  A server scripted per connection: `connections` is a list with, for each connection it
  accepts (each served by its own process), the actions for the requests read on it, in
  order: `{:reply, iodata}` (raw bytes), `{:await, iodata}` (the same once the test sends
  `:release` to the pid in the `{:waiting, pid}` it gets), `:close` (close without
  answering), `:silence` (answer nothing until the client closes, then report
  `{:closed, connection_number}`). After its last action a connection is closed. Every
  request is reported to the test as `{:request, connection_number, method, path, headers,
  body}`. With `tls:` (server `:ssl` options) it speaks https.
  """
  @spec serve([[term()]], keyword()) :: String.t()
  def serve(connections, opts \\ []) do
    test = self()
    tls = Keyword.get(opts, :tls)
    listen_opts = [:binary, ip: {127, 0, 0, 1}, active: false]

    {:ok, listen} =
      if tls, do: :ssl.listen(0, listen_opts ++ tls), else: :gen_tcp.listen(0, listen_opts)

    {:ok, {_, port}} = if tls, do: :ssl.sockname(listen), else: :inet.sockname(listen)

    spawn_link(fn ->
      connections
      |> Enum.with_index(1)
      |> Enum.each(fn {actions, n} ->
        # A TLS handshake the client breaks off uses the connection up.
        with {:ok, socket} <- accept(tls, listen) do
          handler = spawn_link(fn -> receive(do: (:go -> run(socket, actions, n, test, ""))) end)
          :ok = transport(socket).controlling_process(socket, handler)
          send(handler, :go)
        end
      end)

      # Any further connection is refused from now on.
      transport(listen).close(listen)
    end)

    if tls, do: "https://localhost:#{port}", else: "http://127.0.0.1:#{port}"
  end

  defp accept(nil, listen), do: :gen_tcp.accept(listen)

  defp accept(_tls, listen) do
    {:ok, socket} = :ssl.transport_accept(listen)
    :ssl.handshake(socket)
  end

  defp transport(socket) when is_port(socket), do: :gen_tcp
  defp transport(_socket), do: :ssl

  defp run(socket, [], _n, _test, _buffer), do: transport(socket).close(socket)

  defp run(socket, [action | actions], n, test, buffer) do
    net = transport(socket)

    case read_request(socket, buffer) do
      {:ok, method, path, headers, body, rest} ->
        send(test, {:request, n, method, path, headers, body})

        case action do
          {:reply, data} ->
            :ok = net.send(socket, data)
            run(socket, actions, n, test, rest)

          {:await, data} ->
            send(test, {:waiting, self()})
            receive(do: (:release -> :ok = net.send(socket, data)))
            run(socket, actions, n, test, rest)

          :close ->
            net.close(socket)

          :silence ->
            net.recv(socket, 0, 10_000)
            send(test, {:closed, n})
            net.close(socket)
        end

      {:error, _} ->
        net.close(socket)
    end
  end

  defp read_request(socket, buffer) do
    case :binary.split(buffer, "\r\n\r\n") do
      [head, rest] ->
        [request_line | lines] = String.split(head, "\r\n")
        [method, path, "HTTP/1.1"] = String.split(request_line, " ")

        headers =
          Map.new(lines, fn line ->
            [name, value] = String.split(line, ":", parts: 2)
            {String.downcase(name), String.trim(value)}
          end)

        length = String.to_integer(Map.get(headers, "content-length", "0"))

        with {:ok, all} <- fill(socket, rest, length) do
          <<body::binary-size(length), rest::binary>> = all
          {:ok, method, path, headers, body, rest}
        end

      [_] ->
        with {:ok, data} <- transport(socket).recv(socket, 0, 5_000),
             do: read_request(socket, buffer <> data)
    end
  end

  defp fill(_socket, buffer, length) when byte_size(buffer) >= length, do: {:ok, buffer}

  defp fill(socket, buffer, length) do
    with {:ok, data} <- transport(socket).recv(socket, 0, 5_000),
         do: fill(socket, buffer <> data, length)
  end

  @doc "A 200 answer with `body` and extra `headers`, as a `{:reply, iodata}` action."
  @spec ok(binary(), [{String.t(), String.t()}]) :: {:reply, iodata()}
  def ok(body, headers \\ []) do
    lines = for {k, v} <- headers, do: [k, ": ", v, "\r\n"]
    {:reply, ["HTTP/1.1 200 OK\r\nContent-Length: #{byte_size(body)}\r\n", lines, "\r\n", body]}
  end

  @doc "A client on the connection pool `pool` (2 s timeout, no retries unless `opts` say)."
  @spec client(atom(), keyword()) :: HTTP.t()
  def client(pool, opts \\ []) do
    {:ok, http} = HTTP.new(Keyword.merge([timeout: 2_000, max_retries: 0], opts), pool)
    :ok = HTTP.start(http, "https")
    http
  end

  @doc "The numbers of the connections requests came on so far (reported ones only)."
  @spec connections_seen() :: [pos_integer()]
  def connections_seen do
    receive do
      {:request, n, _, _, _, _} -> Enum.uniq([n | connections_seen()])
    after
      0 -> []
    end
  end
end
