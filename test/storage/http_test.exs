defmodule ExZarr.Storage.HTTPTest do
  # ExZarr.Storage.HTTP: requests, retries and option checking. The exchange itself is tested
  # in http/connection_test.exs, connection reuse in http/pool_test.exs.
  use ExUnit.Case, async: true

  import ExZarr.Test.ScriptedTCP
  alias ExZarr.Storage.HTTP

  doctest ExZarr.Storage.HTTP

  @pool :ex_zarr_http_test

  test "a URL that is not http(s)://host... is an error, not a crash" do
    for url <- ["/relative/location", "ftp://h/x", "http:///x", "http://[::1/x"] do
      assert HTTP.request(client(@pool), :get, url, []) == {:error, {:http_error, :invalid_url}}
    end
  end

  test "no server: connection refused" do
    # (not a port the kernel picks: a concurrent test's listen(0) may take it again)
    [port] = ExZarr.Test.Server.free_ports(1)

    assert HTTP.request(client(@pool), :get, "http://127.0.0.1:#{port}/", []) ==
             {:error, {:http_error, :econnrefused}}
  end

  describe "retries" do
    test "transient statuses and connection errors are retried, others are not" do
      for status <- [408, 429, 500, 502, 503, 504],
          do: assert(HTTP.retry?({:ok, status, [], ""}), "#{status}")

      for status <- [200, 206, 301, 400, 403, 404, 409, 412, 416, 501],
          do: refute(HTTP.retry?({:ok, status, [], ""}), "#{status}")

      assert HTTP.retry?({:error, {:http_error, :timeout}})
      refute HTTP.retry?({:error, :not_found})
    end

    test "with_retries sends again up to max_retries more times, then gives the last result" do
      counter = :counters.new(1, [])
      {:ok, http} = HTTP.new([max_retries: 2, base_backoff: 1, max_backoff: 2], @pool)

      answers = fn n ->
        fn ->
          :counters.add(counter, 1, 1)
          if :counters.get(counter, 1) < n, do: {:ok, 503, [], ""}, else: {:ok, 200, [], "ok"}
        end
      end

      assert HTTP.with_retries(http, answers.(3)) == {:ok, 200, [], "ok"}
      assert :counters.get(counter, 1) == 3

      :counters.put(counter, 1, 0)
      assert HTTP.with_retries(http, answers.(10)) == {:ok, 503, [], ""}
      assert :counters.get(counter, 1) == 3

      :counters.put(counter, 1, 0)

      assert HTTP.with_retries(http, fn -> :counters.add(counter, 1, 1) && {:ok, 404, [], ""} end) ==
               {:ok, 404, [], ""}

      assert :counters.get(counter, 1) == 1
    end

    test "a request is sent again on a new connection after a 503" do
      url = serve([[{:reply, "HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n"}], [ok("now")]])
      http = client(@pool, max_retries: 1, base_backoff: 1)

      assert {:ok, 200, _, "now"} =
               HTTP.with_retries(http, fn -> HTTP.request(http, :get, url <> "/k", []) end)

      assert_received {:request, 1, "GET", "/k", _, _}
      assert_received {:request, 2, "GET", "/k", _, _}
    end
  end

  test "client options are checked; ssl options are kept out of inspect" do
    assert {:ok, %HTTP{timeout: 30_000, max_retries: 5}} = HTTP.new([], @pool)

    for {key, bad} <- [
          timeout: 0,
          connect_timeout: -1,
          max_retries: -1,
          base_backoff: 1.5,
          ssl: :on
        ] do
      assert HTTP.new([{key, bad}], @pool) == {:error, {:invalid_option, key, bad}}
    end

    {:ok, http} = HTTP.new([ssl: [password: ~c"hunter2"]], @pool)
    refute inspect(http, structs: false) =~ "hunter2"

    assert Enum.sort(HTTP.option_names()) ==
             Enum.sort([
               :ssl,
               :timeout,
               :connect_timeout,
               :max_retries,
               :base_backoff,
               :max_backoff
             ])
  end
end
