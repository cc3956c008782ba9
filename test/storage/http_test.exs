defmodule ExZarr.Storage.HTTPTest do
  # ExZarr.Storage.HTTP.request/5 (Connection + Pool) against a scripted :gen_tcp server
  # that keeps connections open: keep-alive reuse, body framings, broken answers, timeouts.
  use ExUnit.Case, async: true

  alias ExZarr.Storage.HTTP
  alias ExZarr.Storage.HTTP.Pool

  doctest ExZarr.Storage.HTTP

  @pool :ex_zarr_http_client_test

  # A server scripted per connection: `connections` is a list with, for each connection it
  # accepts (each served by its own process), the actions for the requests read on it, in
  # order: `{:reply, iodata}` (raw bytes), `{:await, iodata}` (the same once the test sends
  # `:release` to the pid in the `{:waiting, pid}` it gets), `:close` (close without
  # answering), `:silence` (answer nothing until the client closes, then report
  # `{:closed, connection_number}`). After its last action a connection is closed. Every
  # request is reported to the test as `{:request, connection_number, method, path, headers,
  # body}`. With `tls:` (server `:ssl` options) it speaks https.
  defp serve(connections, opts \\ []) do
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

  defp ok(body, headers \\ []) do
    lines = for {k, v} <- headers, do: [k, ": ", v, "\r\n"]
    {:reply, ["HTTP/1.1 200 OK\r\nContent-Length: #{byte_size(body)}\r\n", lines, "\r\n", body]}
  end

  defp client(opts \\ []) do
    {:ok, http} = HTTP.new(Keyword.merge([timeout: 2_000, max_retries: 0], opts), @pool)
    :ok = HTTP.start(http, "https")
    http
  end

  defp connections_seen do
    receive do
      {:request, n, _, _, _, _} -> Enum.uniq([n | connections_seen()])
    after
      0 -> []
    end
  end

  test "keep-alive: requests after the first reuse the connection" do
    url = serve([[ok("one"), ok("two", [{"X-Thing", "Yes"}]), ok("")]])
    http = client()
    assert {:ok, 200, _, "one"} = HTTP.request(http, :get, url <> "/a", [])
    assert {:ok, 200, headers, "two"} = HTTP.request(http, :get, url <> "/b?x=1", [])
    assert {"x-thing", "Yes"} in headers
    assert {:ok, 200, _, ""} = HTTP.request(http, :delete, url <> "/c", [])
    assert_received {:request, 1, "GET", "/a", %{"host" => "127.0.0.1:" <> _}, ""}
    assert_received {:request, 1, "GET", "/b?x=1", _, ""}
    assert_received {:request, 1, "DELETE", "/c", _, ""}
  end

  test "an iodata body is sent whole, with its length and type" do
    url = serve([[ok("stored"), ok("")]])
    http = client()
    body = ["ab", ?c, [<<0, 1, 2>>, "xyz"]]

    assert {:ok, 200, _, "stored"} =
             HTTP.request(http, :put, url <> "/k", [{"x-a", "1"}], body: body)

    assert {:ok, 200, _, ""} =
             HTTP.request(http, :post, url <> "/j", [], body: "{}", content_type: "text/json")

    assert_received {:request, 1, "PUT", "/k", headers, <<"abc", 0, 1, 2, "xyz">>}
    assert %{"content-length" => "9", "content-type" => "application/octet-stream"} = headers
    assert headers["x-a"] == "1"
    assert_received {:request, 1, "POST", "/j", %{"content-type" => "text/json"}, "{}"}
  end

  test "chunked bodies are joined, with extensions and trailers skipped" do
    chunked =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" <>
        "5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n"

    url = serve([[{:reply, chunked}, ok("after")]])
    http = client()
    assert {:ok, 200, _, "hello 0123456789"} = HTTP.request(http, :get, url <> "/c", [])
    # The connection is still in step: the next answer comes on it.
    assert {:ok, 200, _, "after"} = HTTP.request(http, :get, url <> "/d", [])
    assert connections_seen() == [1]
  end

  test "a bad chunk is an error, not a short body" do
    url = serve([[{:reply, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}]])
    assert {:error, {:http_error, {:bad_response, _}}} = HTTP.request(client(), :get, url, [])
  end

  test "interim 1xx answers are skipped; HEAD answers have no body" do
    url =
      serve([
        [
          {:reply,
           ["HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]},
          {:reply, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"},
          ok("next")
        ]
      ])

    http = client()
    assert {:ok, 200, _, "ok"} = HTTP.request(http, :get, url, [])
    assert {:ok, 200, headers, ""} = HTTP.request(http, :head, url, [])
    assert {"content-length", "1000"} in headers
    assert {:ok, 200, _, "next"} = HTTP.request(http, :get, url, [])
    assert connections_seen() == [1]
  end

  test "a body without length runs to the end of the connection, which is not reused" do
    url = serve([[{:reply, "HTTP/1.1 200 OK\r\n\r\nall of it"}], [ok("fresh")]])
    http = client()
    assert {:ok, 200, _, "all of it"} = HTTP.request(http, :get, url, [])
    assert {:ok, 200, _, "fresh"} = HTTP.request(http, :get, url, [])
    assert Enum.sort(connections_seen()) == [1, 2]
  end

  test "Connection: close and HTTP/1.0 answers end the connection" do
    url =
      serve([
        [ok("a", [{"Connection", "close"}]), ok("never")],
        [{:reply, "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nb"}],
        [ok("c")]
      ])

    http = client()
    assert {:ok, 200, _, "a"} = HTTP.request(http, :get, url, [])
    assert {:ok, 200, _, "b"} = HTTP.request(http, :get, url, [])
    assert {:ok, 200, _, "c"} = HTTP.request(http, :get, url, [])
    assert Enum.sort(connections_seen()) == [1, 2, 3]
  end

  test "a kept-alive connection the server closed is replaced; GET is sent again, POST is not" do
    # The server answers once on each connection, then closes it without saying so.
    url = serve([[ok("first"), :close], [ok("second")], [ok("third"), :close]])
    http = client()
    assert {:ok, 200, _, "first"} = HTTP.request(http, :get, url <> "/1", [])
    assert {:ok, 200, _, "second"} = HTTP.request(http, :get, url <> "/2", [])
    assert_received {:request, 1, "GET", "/2", _, _}
    assert_received {:request, 2, "GET", "/2", _, _}

    assert {:ok, 200, _, "third"} = HTTP.request(http, :get, url <> "/3", [])
    assert {:error, {:http_error, :closed}} = HTTP.request(http, :post, url <> "/4", [], body: "")
  end

  test "an answer cut short is an error, never a short body" do
    url =
      serve([
        [{:reply, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part"}],
        [{:reply, "HTTP/1.1 200 OK\r\nContent-Le"}],
        [{:reply, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"}]
      ])

    http = client()
    assert HTTP.request(http, :get, url, []) == {:error, {:http_error, :closed}}
    assert HTTP.request(http, :get, url, []) == {:error, {:http_error, :closed}}
    assert HTTP.request(http, :get, url, []) == {:error, {:http_error, :closed}}
  end

  test "a server that says nothing times out; the connection is not reused" do
    url = serve([[:silence], [ok("later")]])
    http = client(timeout: 200)
    assert HTTP.request(http, :get, url, []) == {:error, {:http_error, :timeout}}
    assert {:ok, 200, _, "later"} = HTTP.request(http, :get, url, [])
  end

  test "a body that stops coming times out" do
    url = serve([[{:reply, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"}, :silence]])
    assert HTTP.request(client(timeout: 200), :get, url, []) == {:error, {:http_error, :timeout}}
  end

  test "garbage instead of HTTP is an error" do
    url = serve([[{:reply, "SSH-2.0-OpenSSH\r\n\r\n"}]])
    assert {:error, {:http_error, {:bad_response, _}}} = HTTP.request(client(), :get, url, [])
  end

  test "a URL that is not http(s)://host... is an error, not a crash" do
    for url <- ["/relative/location", "ftp://h/x", "http:///x", "http://[::1/x"] do
      assert HTTP.request(client(), :get, url, []) == {:error, {:http_error, :invalid_url}}
    end
  end

  test "no server: connection refused" do
    {:ok, listen} = :gen_tcp.listen(0, ip: {127, 0, 0, 1})
    {:ok, port} = :inet.port(listen)
    :gen_tcp.close(listen)

    assert HTTP.request(client(), :get, "http://127.0.0.1:#{port}/", []) ==
             {:error, {:http_error, :econnrefused}}
  end

  test "concurrent requests each get their own connection; all come back to the pool" do
    {:reply, answer} = ok("x")
    url = serve(for _ <- 1..4, do: [{:await, answer}, ok("y")])
    http = client()
    tasks = for _ <- 1..4, do: Task.async(fn -> HTTP.request(http, :get, url, []) end)
    # All four are on the server at once, so on four connections; then they are answered.
    waiting = for _ <- 1..4, do: receive(do: ({:waiting, pid} -> pid), after: (2_000 -> nil))
    assert Enum.sort(connections_seen()) == [1, 2, 3, 4]
    Enum.each(waiting, &send(&1, :release))
    assert Enum.all?(Task.await_many(tasks), &match?({:ok, 200, _, "x"}, &1))
    # The server takes no fifth connection: this one is served on a pooled connection.
    assert {:ok, 200, _, "y"} = HTTP.request(http, :get, url, [])
  end

  test "a connection whose borrower died mid-request is closed by the pool's sweep" do
    url = serve([[:silence]])
    http = client(timeout: 10_000)
    borrower = spawn(fn -> HTTP.request(http, :get, url, []) end)
    assert_receive {:request, 1, "GET", "/", _, _}
    Process.exit(borrower, :kill)
    refute_received {:closed, 1}
    :ok = Pool.sweep(@pool)
    assert_receive {:closed, 1}
  end

  describe "https" do
    setup do
      %{server_config: server, client_config: client} =
        :public_key.pkix_test_data(%{
          server_chain: %{
            root: [key: {:namedCurve, :secp256r1}],
            peer: [
              key: {:namedCurve, :secp256r1},
              extensions: [{:Extension, {2, 5, 29, 17}, false, [dNSName: 'localhost']}]
            ]
          },
          client_chain: %{root: [], peer: []}
        })

      %{server: server, cacerts: Keyword.fetch!(client, :cacerts)}
    end

    @tag :capture_log
    test "a server whose certificate the OS's CAs do not vouch for is refused", ctx do
      url = serve([[ok("never")]], tls: ctx.server)

      assert {:error, {:http_error, {:tls_alert, _}}} =
               HTTP.request(client(), :get, url <> "/secret", [])

      refute_received {:request, _, _, _, _, _}
    end

    test "with the server's CA given, requests go over one kept-alive TLS connection", ctx do
      url = serve([[ok("one"), ok("two")]], tls: ctx.server)
      http = client(ssl: [verify: :verify_peer, cacerts: ctx.cacerts])
      assert {:ok, 200, _, "one"} = HTTP.request(http, :get, url <> "/a", [])
      assert {:ok, 200, _, "two"} = HTTP.request(http, :put, url <> "/b", [], body: ["x", "y"])
      assert_received {:request, 1, "GET", "/a", _, ""}
      assert_received {:request, 1, "PUT", "/b", _, "xy"}
    end
  end
end
