defmodule ExZarr.Storage.HTTP.ConnectionTest do
  # One HTTP/1.1 exchange on a connection (ExZarr.Storage.HTTP.request/5 against a server
  # scripted byte by byte): body framings, interim answers, broken answers, timeouts, TLS.
  use ExUnit.Case, async: true

  import ExZarr.Test.ScriptedTCP
  alias ExZarr.Storage.HTTP

  @pool :ex_zarr_http_connection_test

  test "an iodata body is sent whole, with its length and type" do
    url = serve([[ok("stored"), ok("")]])
    http = client(@pool)
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
    http = client(@pool)
    assert {:ok, 200, _, "hello 0123456789"} = HTTP.request(http, :get, url <> "/c", [])
    # The connection is still in step: the next answer comes on it.
    assert {:ok, 200, _, "after"} = HTTP.request(http, :get, url <> "/d", [])
    assert connections_seen() == [1]
  end

  test "a bad chunk is an error, not a short body" do
    url = serve([[{:reply, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}]])

    assert {:error, {:http_error, {:bad_response, _}}} =
             HTTP.request(client(@pool), :get, url, [])
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

    http = client(@pool)
    assert {:ok, 200, _, "ok"} = HTTP.request(http, :get, url, [])
    assert {:ok, 200, headers, ""} = HTTP.request(http, :head, url, [])
    assert {"content-length", "1000"} in headers
    assert {:ok, 200, _, "next"} = HTTP.request(http, :get, url, [])
    assert connections_seen() == [1]
  end

  test "a body without length runs to the end of the connection, which is not reused" do
    url = serve([[{:reply, "HTTP/1.1 200 OK\r\n\r\nall of it"}], [ok("fresh")]])
    http = client(@pool)
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

    http = client(@pool)
    assert {:ok, 200, _, "a"} = HTTP.request(http, :get, url, [])
    assert {:ok, 200, _, "b"} = HTTP.request(http, :get, url, [])
    assert {:ok, 200, _, "c"} = HTTP.request(http, :get, url, [])
    assert Enum.sort(connections_seen()) == [1, 2, 3]
  end

  test "an answer cut short is an error, never a short body" do
    url =
      serve([
        [{:reply, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part"}],
        [{:reply, "HTTP/1.1 200 OK\r\nContent-Le"}],
        [{:reply, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"}]
      ])

    http = client(@pool)
    assert HTTP.request(http, :get, url, []) == {:error, {:http_error, :closed}}
    assert HTTP.request(http, :get, url, []) == {:error, {:http_error, :closed}}
    assert HTTP.request(http, :get, url, []) == {:error, {:http_error, :closed}}
  end

  test "a server that says nothing times out; the connection is not reused" do
    url = serve([[:silence], [ok("later")]])
    http = client(@pool, timeout: 200)
    assert HTTP.request(http, :get, url, []) == {:error, {:http_error, :timeout}}
    assert {:ok, 200, _, "later"} = HTTP.request(http, :get, url, [])
  end

  test "a body that stops coming times out" do
    url = serve([[{:reply, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"}, :silence]])

    assert HTTP.request(client(@pool, timeout: 200), :get, url, []) ==
             {:error, {:http_error, :timeout}}
  end

  test "garbage instead of HTTP is an error" do
    url = serve([[{:reply, "SSH-2.0-OpenSSH\r\n\r\n"}]])

    assert {:error, {:http_error, {:bad_response, _}}} =
             HTTP.request(client(@pool), :get, url, [])
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
               HTTP.request(client(@pool), :get, url <> "/secret", [])

      refute_received {:request, _, _, _, _, _}
    end

    test "with the server's CA given, requests go over one kept-alive TLS connection", ctx do
      url = serve([[ok("one"), ok("two")]], tls: ctx.server)
      http = client(@pool, ssl: [verify: :verify_peer, cacerts: ctx.cacerts])
      assert {:ok, 200, _, "one"} = HTTP.request(http, :get, url <> "/a", [])
      assert {:ok, 200, _, "two"} = HTTP.request(http, :put, url <> "/b", [], body: ["x", "y"])
      assert_received {:request, 1, "GET", "/a", _, ""}
      assert_received {:request, 1, "PUT", "/b", _, "xy"}
    end
  end
end
