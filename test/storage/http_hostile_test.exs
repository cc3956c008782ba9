defmodule ExZarr.Storage.HTTPHostileTest do
  @moduledoc """
  Hostile HTTP answers to the HTTP store: bodies larger than `ExZarr.Limits.max_bytes/0`
  (announced by `Content-Length`, chunked, or running to the end of the connection), heads
  with endless header lines, lying lengths and malformed `ETag`s are errors, never a
  memory blow-up or the wrong bytes. Not async: it lowers the `:max_bytes` setting.
  """
  use ExUnit.Case, async: false

  alias ExZarr.Storage
  alias ExZarr.Test.ScriptedHTTP

  setup do
    old = Application.get_env(:ex_zarr, :max_bytes)
    on_exit(fn -> restore(old) end)
  end

  defp restore(nil), do: Application.delete_env(:ex_zarr, :max_bytes)
  defp restore(value), do: Application.put_env(:ex_zarr, :max_bytes, value)

  defp store(responses) do
    {:ok, store} =
      Storage.new(:http,
        url: ScriptedHTTP.serve(responses) <> "/a.zarr",
        max_retries: 0,
        timeout: 2_000
      )

    store
  end

  defp chunked(body, size) do
    chunks =
      for <<part::binary-size(size) <- body>>,
        do: [Integer.to_string(size, 16), "\r\n", part, "\r\n"]

    ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunks, "0\r\n\r\n"]
  end

  test "a Content-Length beyond the limit is refused before the body is read" do
    head = "HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000000\r\n\r\nabc"
    {time, result} = :timer.tc(fn -> Storage.get(store([{:raw, head}]), "k") end)

    assert {:error, {:http_error, {:too_large, :http_body, 1_000_000_000_000_000_000, _}}} =
             result

    assert time < 1_000_000
  end

  test "chunked bodies and bodies up to the end of the connection stop at the limit" do
    Application.put_env(:ex_zarr, :max_bytes, 1_000)
    body = :binary.copy("x", 4_000)
    to_close = ["HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", body]

    assert {:error, {:http_error, {:too_large, :http_body, _, 1_000}}} =
             Storage.get(store([{:raw, chunked(body, 500)}]), "k")

    assert {:error, {:http_error, {:too_large, :http_body, _, 1_000}}} =
             Storage.get(store([{:raw, to_close}]), "k")

    # Under the limit both still read.
    restore(nil)
    assert Storage.get(store([{:raw, chunked(body, 500)}]), "k") == {:ok, body}
    assert Storage.get(store([{:raw, to_close}]), "k") == {:ok, body}
  end

  test "a head with endless header lines is an error" do
    lines = for i <- 1..2_000, do: "x-h#{i}: v\r\n"
    answer = ["HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", lines, "\r\nz"]

    assert {:error, {:http_error, {:bad_response, :too_many_headers}}} =
             Storage.get(store([{:raw, answer}]), "k")
  end

  test "a body shorter or longer than its Content-Length never reads as the value" do
    short = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nabc"
    assert {:error, _} = Storage.get(store([{:raw, short}]), "k")
    long = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabcdef"
    assert Storage.get(store([{:raw, long}]), "k") == {:ok, "abc"}

    for length <- ["-1", "abc", "3, 4", ""] do
      answer = "HTTP/1.1 200 OK\r\nContent-Length: #{length}\r\nConnection: close\r\n\r\nabc"

      assert Storage.get(store([{:raw, answer}]), "k") in [{:ok, "abc"}, {:error, :bad}] or
               match?({:error, _}, Storage.get(store([{:raw, answer}]), "k"))
    end
  end

  test "malformed ETags are generations compared as given, never sent back broken" do
    s = store([{200, [{"etag", "W/\"x\" \"y\""}], "v1"}, {200, [{"etag", "other"}], "v2"}])

    assert {:ok, ["v1"], "W/\"x\" \"y\""} = Storage.get_ranges_with_generation(s, "k", [nil], nil)

    assert {:error, _} = Storage.get_ranges_with_generation(s, "k", [nil], "W/\"x\" \"y\"")
  end

  test "a redirect or a URL to a port outside 1..65535 is an error, not an exit" do
    for port <- [0, 65_536, 99_999] do
      target = "http://127.0.0.1:#{port}/x"
      s = store([{302, [{"location", target}], ""}])
      assert Storage.get(s, "k") == {:error, {:http_error, {:invalid_port, port}}}

      {:ok, direct} = Storage.new(:http, url: target, max_retries: 0)
      assert {:error, _} = Storage.get(direct, "k")
    end
  end
end
