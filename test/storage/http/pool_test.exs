defmodule ExZarr.Storage.HTTP.PoolTest do
  # Connections kept alive and shared between requests, replaced when the server closed them,
  # and swept when their borrower died, through ExZarr.Storage.HTTP.request/5.
  use ExUnit.Case, async: true

  import ExZarr.Test.ScriptedTCP
  alias ExZarr.Storage.HTTP
  alias ExZarr.Storage.HTTP.Pool

  @pool :ex_zarr_http_pool_test

  test "keep-alive: requests after the first reuse the connection" do
    url = serve([[ok("one"), ok("two", [{"X-Thing", "Yes"}]), ok("")]])
    http = client(@pool)
    assert {:ok, 200, _, "one"} = HTTP.request(http, :get, url <> "/a", [])
    assert {:ok, 200, headers, "two"} = HTTP.request(http, :get, url <> "/b?x=1", [])
    assert {"x-thing", "Yes"} in headers
    assert {:ok, 200, _, ""} = HTTP.request(http, :delete, url <> "/c", [])
    assert_received {:request, 1, "GET", "/a", %{"host" => "127.0.0.1:" <> _}, ""}
    assert_received {:request, 1, "GET", "/b?x=1", _, ""}
    assert_received {:request, 1, "DELETE", "/c", _, ""}
  end

  test "a kept-alive connection the server closed is replaced; GET is sent again, POST is not" do
    # The server answers once on each connection, then closes it without saying so.
    url = serve([[ok("first"), :close], [ok("second")], [ok("third"), :close]])
    http = client(@pool)
    assert {:ok, 200, _, "first"} = HTTP.request(http, :get, url <> "/1", [])
    assert {:ok, 200, _, "second"} = HTTP.request(http, :get, url <> "/2", [])
    assert_received {:request, 1, "GET", "/2", _, _}
    assert_received {:request, 2, "GET", "/2", _, _}

    assert {:ok, 200, _, "third"} = HTTP.request(http, :get, url <> "/3", [])
    assert {:error, {:http_error, :closed}} = HTTP.request(http, :post, url <> "/4", [], body: "")
  end

  test "concurrent requests each get their own connection; all come back to the pool" do
    {:reply, answer} = ok("x")
    url = serve(for _ <- 1..4, do: [{:await, answer}, ok("y")])
    http = client(@pool)
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
    http = client(@pool, timeout: 10_000)
    borrower = spawn(fn -> HTTP.request(http, :get, url, []) end)
    assert_receive {:request, 1, "GET", "/", _, _}
    Process.exit(borrower, :kill)
    refute_received {:closed, 1}
    :ok = Pool.sweep(@pool)
    assert_receive {:closed, 1}
  end
end
