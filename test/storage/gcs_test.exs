defmodule ExZarr.Storage.GCSTest do
  # One fake-gcs-server for the module; some tests set environment variables, so not async.
  use ExUnit.Case, async: false

  alias ExZarr.Test.FakeGCS

  use ExZarr.StorageConformance,
    backend: :gcs,
    opts: fn ctx ->
      FakeGCS.store_opts(ctx.server, "conformance", "t/#{:erlang.phash2(ctx.test)}") ++
        [resumable_threshold: 4 * 1024 * 1024]
    end

  use ExZarr.Test.ObjectStoreCases,
    server: ExZarr.Test.FakeGCS,
    backend: ExZarr.Storage.GCS,
    scheme: "gs://",
    bucket_option: :bucket

  defp store(opts) do
    {:ok, store} = Storage.new(:gcs, opts)
    store
  end

  test "conditions hold for resumable uploads", ctx do
    opts = FakeGCS.store_opts(ctx.server, "resumable-cas", "r")
    store = store(opts ++ [resumable_threshold: 0, chunk_size: 256 * 1024])
    assert ExZarr.Test.ConditionalCases.large_values(store, 600_000) == :ok
  end

  test "large values go up in resumable chunks; small ones in one request", ctx do
    opts = FakeGCS.store_opts(ctx.server, "resumable", "r")
    store = store(opts ++ [resumable_threshold: 1024 * 1024, chunk_size: 256 * 1024])
    value = :crypto.strong_rand_bytes(1024 * 1024 + 1000)

    :ok =
      Storage.put(store, "big", [
        binary_part(value, 0, 1000),
        binary_part(value, 1000, 1024 * 1024)
      ])

    assert Storage.get(store, "big") == {:ok, value}

    assert Storage.get(store, "big", {256 * 1024 - 3, 6}) ==
             {:ok, binary_part(value, 256 * 1024 - 3, 6)}

    :ok = Storage.put(store, "small", ["a", ["b" | "c"]])
    assert Storage.get(store, "small") == {:ok, "abc"}
  end

  @tag :interop
  test "zarr-python (gcsfs) and ExZarr read each other's v2, v3 and sharded arrays", ctx do
    opts = FakeGCS.store_opts(ctx.server, "gcsfs", "")
    options = %{"endpoint_url" => ctx.server.endpoint, "token" => "anon", "project" => "exzarr"}

    ExZarr.Test.FsspecInterop.both_ways("gs://gcsfs", options, fn path ->
      store(Keyword.put(opts, :path, path))
    end)
  end

  # tensorstore's gcs kvstore, pointed at the emulator; argv: endpoint, bucket, mode.
  @tensorstore """
  import os, sys, json
  endpoint, bucket, mode = sys.argv[1:4]
  os.environ["TENSORSTORE_GCS_HTTP_URL"] = endpoint
  os.environ["GOOGLE_AUTH_TOKEN_FOR_TESTING"] = "unused"
  import numpy as np, tensorstore as ts
  data = (np.arange(63, dtype="<u2") * 3).reshape(7, 9)
  for driver in ["zarr3", "zarr"]:
      spec = {"driver": driver,
              "kvstore": {"driver": "gcs", "bucket": bucket, "path": f"{mode}/{driver}/"}}
      if mode == "ts":
          arr = ts.open(spec, create=True, dtype=ts.uint16, shape=[7, 9],
                        chunk_layout=ts.ChunkLayout(read_chunk_shape=[4, 4])).result()
          arr[...] = data
      else:
          print(json.dumps(ts.open(spec).result().read().result().tolist() == data.tolist()))
  """

  test "tensorstore's gcs kvstore and ExZarr read each other's arrays", ctx do
    opts = FakeGCS.store_opts(ctx.server, "interop", "")
    expected = for i <- 0..62, into: <<>>, do: <<i * 3::little-16>>
    ExZarr.Test.Python.run!(@tensorstore, [ctx.server.endpoint, "interop", "ts"])

    for driver <- ["zarr3", "zarr"] do
      {:ok, array} = ExZarr.open([storage: :gcs] ++ Keyword.put(opts, :path, "ts/" <> driver))
      assert ExZarr.Array.get_slice(array, start: {0, 0}, stop: {7, 9}) == {:ok, expected}
    end

    for {driver, format} <- [{"zarr3", 3}, {"zarr", 2}] do
      {:ok, array} =
        ExZarr.create(
          storage: store(Keyword.put(opts, :path, "ex/" <> driver)),
          shape: {7, 9},
          chunks: {4, 4},
          dtype: :uint16,
          zarr_format: format,
          fill_value: 0
        )

      :ok = ExZarr.Array.set_slice(array, expected, start: {0, 0}, stop: {7, 9})
    end

    # tensorstore logs on stderr, which comes in the same output.
    out = ExZarr.Test.Python.run!(@tensorstore, [ctx.server.endpoint, "interop", "ex"])
    assert Enum.filter(String.split(out, "\n"), &(&1 in ["true", "false"])) == ["true", "true"]
  end

  test "the token is sent as a bearer token and never shows", ctx do
    opts = FakeGCS.store_opts(ctx.server, "token", "")
    secret = "ya29.not-a-real-token-XYZ"
    test = self()
    store = store(Keyword.put(opts, :token, fn -> send(test, :token_used) && secret end))
    :ok = Storage.put(store, "k", "v")
    assert_received :token_used
    assert Storage.get(store, "k") == {:ok, "v"}
    refute inspect(store) =~ secret
    refute inspect(store.state, structs: false) =~ secret

    System.put_env("GOOGLE_OAUTH_ACCESS_TOKEN", secret)

    try do
      from_env = store(opts)
      assert is_function(from_env.state.token, 0)
      assert from_env.state.token.() == secret
    after
      System.delete_env("GOOGLE_OAUTH_ACCESS_TOKEN")
    end

    assert store(opts).state.token == nil
  end

  test "STORAGE_EMULATOR_HOST points the store at an emulator", ctx do
    opts = FakeGCS.store_opts(ctx.server, "emulator", "")
    :ok = Storage.put(store(opts), "k", "v")
    System.put_env("STORAGE_EMULATOR_HOST", "127.0.0.1:#{ctx.server.http_port}")

    try do
      assert Storage.get(store(bucket: "emulator"), "k") == {:ok, "v"}
    after
      System.delete_env("STORAGE_EMULATOR_HOST")
    end
  end

  test "a missing bucket is an error, not an empty store", ctx do
    store = store(endpoint: ctx.server.endpoint, bucket: "no-such-bucket", max_retries: 0)
    assert {:error, {:gcs_error, 404, _}} = Storage.list(store)
    assert {:error, {:gcs_error, _, _}} = Storage.put(store, "k", "v")
  end

  test "with the server gone, calls give errors after their retries" do
    [port] = ExZarr.Test.Server.free_ports(1)

    store =
      store(endpoint: "http://127.0.0.1:#{port}", bucket: "b", max_retries: 2, base_backoff: 1)

    assert {:error, {:http_error, _}} = Storage.get(store, "k")
    assert {:error, {:http_error, _}} = Storage.put(store, "k", "v")
    assert {:error, {:http_error, _}} = Storage.list(store)
  end

  test "bad options give errors" do
    assert Storage.new(:gcs, []) == {:error, {:missing_option, :bucket}}
    assert Storage.new(:gcs, bucket: "a/b") == {:error, {:invalid_option, :bucket, "a/b"}}

    assert Storage.new(:gcs, bucket: "b", path: "../x") ==
             {:error, {:invalid_option, :path, "../x"}}

    assert Storage.new(:gcs, bucket: "b", endpoint: "ftp://x") ==
             {:error, {:invalid_option, :endpoint, "ftp://x"}}

    assert Storage.new(:gcs, bucket: "b", chunk_size: 300 * 1024) ==
             {:error, {:invalid_option, :chunk_size, 300 * 1024}}

    assert Storage.new(:gcs, bucket: "b", max_retries: -1) ==
             {:error, {:invalid_option, :max_retries, -1}}

    assert {:error, {:invalid_option, :token, _}} = Storage.new(:gcs, bucket: "b", token: 42)
  end
end

defmodule ExZarr.Storage.GCSRetryTest do
  # A scripted HTTP server stands in for GCS to check retries and resumed uploads.
  use ExUnit.Case, async: true

  alias ExZarr.Storage
  alias ExZarr.Test.ScriptedHTTP

  defp store(endpoint, opts \\ []) do
    {:ok, store} =
      Storage.new(
        :gcs,
        [endpoint: endpoint, bucket: "b", max_retries: 3, base_backoff: 1] ++ opts
      )

    store
  end

  test "429, 503 and connection resets are retried; other errors are not" do
    endpoint =
      ScriptedHTTP.serve([
        {429, [], ""},
        {503, [], ~s({"error": {"code": 503, "message": "backend error"}})},
        :reset,
        {200, [], "data"},
        {403, [], ~s({"error": {"code": 403, "message": "no access"}})}
      ])

    store = store(endpoint, token: "tok")
    assert Storage.get(store, "a b/c") == {:ok, "data"}
    assert Storage.get(store, "k") == {:error, {:gcs_error, 403, "no access"}}
    requests = ScriptedHTTP.requests()
    assert length(requests) == 5
    {"GET", path, headers, _} = hd(requests)
    assert path == "/storage/v1/b/b/o/a%20b%2Fc?alt=media"
    assert headers["authorization"] == "Bearer tok"
  end

  test "retries stop after max_retries with the last error" do
    endpoint = ScriptedHTTP.serve(List.duplicate({503, [], "busy"}, 4))
    assert Storage.get(store(endpoint), "k") == {:error, {:gcs_error, 503, "busy"}}
    assert length(ScriptedHTTP.requests()) == 4
  end

  test "a resumable upload resumes from the offset the server reports after a failure" do
    kib = 1024
    value = :crypto.strong_rand_bytes(600 * kib)
    size = byte_size(value)

    endpoint =
      ScriptedHTTP.serve(fn endpoint ->
        [
          {200, [{"Location", endpoint <> "/upload/session/s1"}], ""},
          {308, [{"Range", "bytes=0-#{256 * kib - 1}"}], ""},
          {503, [], ""},
          # The server kept part of the failed chunk.
          {308, [{"Range", "bytes=0-299999"}], ""},
          {308, [{"Range", "bytes=0-#{300_000 + 256 * kib - 1}"}], ""},
          {200, [], "{}"}
        ]
      end)

    store = store(endpoint, token: "tok", resumable_threshold: 0, chunk_size: 256 * kib)
    assert Storage.put(store, "big", value) == :ok

    [{"POST", start, start_headers, _} | chunks] = ScriptedHTTP.requests()
    assert start == "/upload/storage/v1/b/b/o?uploadType=resumable&name=big"
    assert start_headers["x-upload-content-length"] == "#{size}"

    sent =
      for {"PUT", "/upload/session/s1", headers, body} <- chunks do
        assert headers["authorization"] == "Bearer tok"
        {headers["content-range"], body}
      end

    last = 300_000 + 256 * kib

    assert sent == [
             {"bytes 0-#{256 * kib - 1}/#{size}", binary_part(value, 0, 256 * kib)},
             {"bytes #{256 * kib}-#{512 * kib - 1}/#{size}",
              binary_part(value, 256 * kib, 256 * kib)},
             {"bytes */#{size}", ""},
             {"bytes 300000-#{last - 1}/#{size}", binary_part(value, 300_000, 256 * kib)},
             {"bytes #{last}-#{size - 1}/#{size}", binary_part(value, last, size - last)}
           ]
  end

  test "an upload the server stops taking ends with an error and is cancelled" do
    endpoint =
      ScriptedHTTP.serve(fn endpoint ->
        [{200, [{"Location", endpoint <> "/s"}], ""}, {308, [{"Range", "bytes=0-99"}], ""}] ++
          List.duplicate({308, [{"Range", "bytes=0-99"}], ""}, 4) ++ [{499, [], ""}]
      end)

    store = store(endpoint, resumable_threshold: 0, chunk_size: 256 * 1024)

    assert Storage.put(store, "k", :binary.copy("x", 1000)) ==
             {:error, {:gcs_error, 308, "the resumable upload makes no progress"}}

    [_start | rest] = ScriptedHTTP.requests()

    assert for({method, "/s", headers, _} <- rest, do: {method, headers["content-range"]}) ==
             [{"PUT", "bytes 0-999/1000"} | List.duplicate({"PUT", "bytes 100-999/1000"}, 4)] ++
               [{"DELETE", nil}]
  end

  test "the token goes only to the endpoint's host, not to a session URI elsewhere" do
    elsewhere = ScriptedHTTP.serve([{200, [], "{}"}])
    endpoint = ScriptedHTTP.serve([{200, [{"Location", elsewhere <> "/s"}], ""}])
    store = store(endpoint, token: "tok", resumable_threshold: 0)
    assert Storage.put(store, "big", "abc") == :ok

    assert [{"POST", _, %{"authorization" => "Bearer tok"}, _}, {"PUT", "/s", headers, "abc"}] =
             ScriptedHTTP.requests()

    refute Map.has_key?(headers, "authorization")
  end
end
