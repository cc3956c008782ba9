defmodule ExZarr.Storage.S3Test do
  # One MinIO for the module; some tests set AWS_* environment variables, so not async.
  use ExUnit.Case, async: false
  @moduletag :minio
  # A request may take its 30 s timeout and be retried when the machine is busy.
  @moduletag timeout: 180_000

  alias ExZarr.Test.{MinIO, Server, Toxiproxy}

  setup_all do
    server = MinIO.start!()
    on_exit(fn -> MinIO.stop(server) end)
    %{minio: server}
  end

  # MinIO ignores If-Match on DELETE (see the test below): no conditional deletes by default.
  use ExZarr.StorageConformance,
    backend: ExZarr.Storage.S3,
    conditional_deletes: false,
    opts: fn ctx ->
      MinIO.store_opts(ctx.minio, "conformance", "t/#{:erlang.phash2(ctx.test)}")
    end

  alias ExZarr.Storage.S3

  defp store(opts) do
    {:ok, store} = Storage.new(S3, opts)
    store
  end

  test "MinIO ignores If-Match on DELETE: verify_conditional_writes/1 finds it out", ctx do
    opts = MinIO.store_opts(ctx.minio, "deletes", "d")
    assert Storage.conditional_deletes?(store(opts ++ [conditional_deletes: true]))
    refute Storage.conditional_deletes?(store(opts))

    refute Storage.conditional_deletes?(
             store(opts ++ [conditional_deletes: true, conditional_writes: false])
           )

    trusting = store(opts ++ [conditional_deletes: true])
    {:ok, stale} = Storage.put_if(trusting, "k", "one", :absent)
    {:ok, _} = Storage.put_if(trusting, "k", "two", stale)
    # the server deletes the newer object all the same
    assert Storage.delete_if(trusting, "k", stale) == :ok
    assert Storage.get(trusting, "k") == {:error, :not_found}
    assert Storage.verify_conditional_writes(trusting) == {:error, {:conditions_ignored, :delete}}
    assert Storage.verify_conditional_writes(store(opts)) == :ok
    assert Storage.list(trusting) == {:ok, []}

    assert {:error, {:invalid_option, :conditional_deletes, 1}} =
             Storage.new(S3, opts ++ [conditional_deletes: 1])
  end

  test "values are objects under the store's path; stores with other paths are separate", ctx do
    opts = MinIO.store_opts(ctx.minio, "separate", "one/a.zarr")
    one = store(opts)
    two = store(Keyword.put(opts, :path, "one/b.zarr"))
    whole = store(Keyword.put(opts, :path, ""))
    :ok = Storage.put(one, "c/0", "1")
    :ok = Storage.put(two, "c/0", "2")
    assert Storage.get(one, "c/0") == {:ok, "1"}
    assert Storage.list(two) == {:ok, ["c/0"]}
    assert Storage.list(whole, "one") == {:ok, ["one/a.zarr/c/0", "one/b.zarr/c/0"]}
    assert Storage.get(whole, "one/b.zarr/c/0") == {:ok, "2"}
  end

  test "s3:// URLs name the bucket and the path", ctx do
    opts = MinIO.store_opts(ctx.minio, "urls", "")
    url_opts = opts |> Keyword.drop([:bucket]) |> Keyword.put(:path, "s3://urls/deep/er/")
    :ok = Storage.put(store(url_opts), "k", "v")
    assert Storage.get(store(opts), "deep/er/k") == {:ok, "v"}
  end

  test "listings follow continuation tokens across pages", ctx do
    opts = MinIO.store_opts(ctx.minio, "pages", "p") ++ [list_page_size: 4]
    store = store(opts)
    keys = for i <- 1..11, do: "c/#{i}"
    for k <- keys, do: :ok = Storage.put(store, k, k)
    assert Storage.list(store) == {:ok, Enum.sort(keys)}
    for i <- 1..5, do: :ok = Storage.put(store, "d#{i}/x", "")
    assert {:ok, %{keys: [], prefixes: prefixes}} = Storage.list_dir(store)
    assert prefixes == ~w(c d1 d2 d3 d4 d5)

    assert Storage.list_dir(store, "c") ==
             {:ok, %{keys: Enum.sort(for i <- 1..11, do: "#{i}"), prefixes: []}}
  end

  test "iodata is uploaded as its bytes, in one PUT or in parts", ctx do
    opts = MinIO.store_opts(ctx.minio, "multipart", "m") ++ [multipart_threshold: 6 * 1024 * 1024]
    store = store(opts)
    chunk = :crypto.strong_rand_bytes(1024 * 1024)
    value = List.duplicate(chunk, 13)
    :ok = Storage.put(store, "parts", value)
    assert Storage.get(store, "parts") == {:ok, IO.iodata_to_binary(value)}

    assert Storage.get(store, "parts", {5 * 1024 * 1024 - 3, 6}) ==
             {:ok, binary_part(IO.iodata_to_binary(value), 5 * 1024 * 1024 - 3, 6)}

    :ok = Storage.put(store, "small", ["a", ["b" | "c"]])
    assert Storage.get(store, "small") == {:ok, "abc"}
    # No multipart upload is left behind.
    {:ok, 200, _, body} =
      S3.Client.request(store.state.client, :get, "", query: [{"uploads", ""}])

    assert S3.Client.xml_values(body, "UploadId") == []
  end

  test "conditions hold for multipart uploads, checked at completion", ctx do
    opts = MinIO.store_opts(ctx.minio, "multipart-cas", "m") ++ [multipart_threshold: 0]
    store = store(opts)
    assert ExZarr.Test.ConditionalCases.large_values(store, 6 * 1024 * 1024 + 17) == :ok
    # The refused uploads were aborted.
    {:ok, 200, _, body} =
      S3.Client.request(store.state.client, :get, "", query: [{"uploads", ""}])

    assert S3.Client.xml_values(body, "UploadId") == []
  end

  test "conditional_writes: false says the server cannot do conditions; they are refused", ctx do
    opts = MinIO.store_opts(ctx.minio, "no-conditions", "") ++ [conditional_writes: false]
    store = store(opts)
    refute Storage.conditional_writes?(store)
    unsupported = {:error, {:conditional_writes_unsupported, S3}}
    assert Storage.put_if(store, "k", "v", :absent) == unsupported
    assert Storage.update(store, "k", fn _ -> {:write, "v", :ok} end) == unsupported
    assert Storage.verify_conditional_writes(store) == unsupported
    assert Storage.get(store, "k") == {:error, :not_found}

    assert Storage.new(S3, Keyword.put(opts, :conditional_writes, "no")) ==
             {:error, {:invalid_option, :conditional_writes, "no"}}
  end

  @tag timeout: 600_000
  test "values over 100 MB go up in parts and come back whole", ctx do
    store = store(MinIO.store_opts(ctx.minio, "huge", "h"))
    value = :binary.copy(:crypto.strong_rand_bytes(1024 * 1024), 110)
    :ok = Storage.put(store, "big", value)

    assert Storage.get(store, "big", {:suffix, 10}) ==
             {:ok, binary_part(value, byte_size(value) - 10, 10)}

    assert Storage.get(store, "big") == {:ok, value}
  end

  @tensorstore """
  import os, sys, json
  endpoint, bucket, path, user, password, mode = sys.argv[1:7]
  os.environ.update(AWS_ACCESS_KEY_ID=user, AWS_SECRET_ACCESS_KEY=password, AWS_REGION="us-east-1")
  import numpy as np, tensorstore as ts
  def spec(driver, sub):
      kv = {"driver": "s3", "bucket": bucket, "path": f"{path}/{sub}/", "endpoint": endpoint,
            "aws_region": "us-east-1"}
      return {"driver": driver, "kvstore": kv}
  if mode == "write":
      for driver, sub in [("zarr3", "v3"), ("zarr", "v2")]:
          a = ts.open(spec(driver, sub), create=True, dtype=ts.float32, shape=[6, 5],
                      chunk_layout=ts.ChunkLayout(chunk_shape=[4, 3])).result()
          a[...] = np.arange(30, dtype=np.float32).reshape(6, 5) / 4
  else:
      for driver, sub in [("zarr3", "v3"), ("zarr", "v2")]:
          a = ts.open(spec(driver, sub)).result()
          print("ROWS", json.dumps(a.read().result().tolist()))
  """

  test "tensorstore's s3 driver and ExZarr read each other's arrays on MinIO", ctx do
    opts = MinIO.store_opts(ctx.minio, "interop", "")
    {user, password} = MinIO.credentials()
    expected = for i <- 0..29, into: <<>>, do: <<i / 4::little-float-32>>

    ExZarr.Test.Python.run!(@tensorstore, [
      ctx.minio.endpoint,
      "interop",
      "from_ts",
      user,
      password,
      "write"
    ])

    for sub <- ["v3", "v2"] do
      {:ok, array} = ExZarr.open(storage: store(Keyword.put(opts, :path, "from_ts/" <> sub)))

      assert ExZarr.Array.get_slice(array, start: {0, 0}, stop: {6, 5}) == {:ok, expected}
    end

    for {sub, fmt} <- [{"v3", 3}, {"v2", 2}] do
      {:ok, array} =
        ExZarr.create(
          storage: store(Keyword.put(opts, :path, "from_ex/" <> sub)),
          shape: {6, 5},
          chunks: {4, 3},
          dtype: :float32,
          zarr_format: fmt,
          fill_value: 0.0
        )

      :ok = ExZarr.Array.set_slice(array, expected, start: {0, 0}, stop: {6, 5})
    end

    out =
      ExZarr.Test.Python.run!(@tensorstore, [
        ctx.minio.endpoint,
        "interop",
        "from_ex",
        user,
        password,
        "read"
      ])

    rows = for r <- 0..5, do: for(c <- 0..4, do: (r * 5 + c) / 4)
    decoded = for "ROWS " <> json <- String.split(out, "\n"), do: :jiffy.decode(json)
    assert decoded == [rows, rows], out
  end

  @zarr_python """
  import sys, json
  endpoint, url, user, password, mode = sys.argv[1:6]
  try:
      import s3fs  # noqa: F401
  except ImportError:
      sys.exit("s3fs is missing from the test venv: add s3fs==2026.9.0 to scripts/requirements.txt")
  import numpy as np, zarr
  from zarr.storage import FsspecStore
  options = {"key": user, "secret": password, "client_kwargs": {"endpoint_url": endpoint}}
  for fmt in (3, 2):
      store = FsspecStore.from_url(f"{url}/v{fmt}", storage_options=options, read_only=mode == "read")
      if mode == "write":
          a = zarr.create_array(store, shape=(7, 4), chunks=(3, 3), dtype="int16", zarr_format=fmt,
                                fill_value=-1, compressors=None)
          a[:] = np.arange(28, dtype="int16").reshape(7, 4) * 3
      else:
          a = zarr.open_array(store, mode="r")
          print("ROWS", json.dumps(a[:].tolist()))
  """

  @tag :s3fs
  test "zarr-python (s3fs) and ExZarr read each other's arrays on MinIO", ctx do
    opts = MinIO.store_opts(ctx.minio, "zarrpy", "")
    {user, password} = MinIO.credentials()
    expected = for i <- 0..27, into: <<>>, do: <<i * 3::little-signed-16>>
    args = fn url, mode -> [ctx.minio.endpoint, url, user, password, mode] end

    ExZarr.Test.Python.run!(@zarr_python, args.("s3://zarrpy/from_py", "write"))

    for fmt <- [3, 2] do
      {:ok, array} = ExZarr.open(storage: store(Keyword.put(opts, :path, "from_py/v#{fmt}")))
      assert array.metadata.zarr_format == fmt
      assert ExZarr.Array.get_slice(array, start: {0, 0}, stop: {7, 4}) == {:ok, expected}
    end

    for fmt <- [3, 2] do
      {:ok, array} =
        ExZarr.create(
          storage: store(Keyword.put(opts, :path, "from_ex/v#{fmt}")),
          shape: {7, 4},
          chunks: {3, 3},
          dtype: :int16,
          zarr_format: fmt,
          fill_value: -1
        )

      :ok = ExZarr.Array.set_slice(array, expected, start: {0, 0}, stop: {7, 4})
    end

    out = ExZarr.Test.Python.run!(@zarr_python, args.("s3://zarrpy/from_ex", "read"))
    rows = for r <- 0..6, do: for(c <- 0..3, do: (r * 4 + c) * 3)
    decoded = for "ROWS " <> json <- String.split(out, "\n"), do: :jiffy.decode(json)
    assert decoded == [rows, rows], out
  end

  test "wrong credentials give an error that names no secret", ctx do
    opts = MinIO.store_opts(ctx.minio, "creds", "")
    bad = store(Keyword.put(opts, :secret_access_key, "not-the-secret-XYZ"))
    assert {:error, {:s3_error, 403, "SignatureDoesNotMatch", _}} = Storage.get(bad, "k")
    assert {:error, reason} = Storage.put(bad, "k", "v")
    refute inspect(reason) =~ "not-the-secret-XYZ"
    refute inspect(bad) =~ "not-the-secret-XYZ"
    refute inspect(bad.state, structs: false) =~ "not-the-secret-XYZ"
  end

  test "credentials come from the AWS environment variables", ctx do
    opts = MinIO.store_opts(ctx.minio, "env", "")
    :ok = Storage.put(store(opts), "k", "v")
    {user, password} = MinIO.credentials()

    env = %{
      "AWS_ACCESS_KEY_ID" => user,
      "AWS_SECRET_ACCESS_KEY" => password,
      "AWS_ENDPOINT_URL" => ctx.minio.endpoint
    }

    System.put_env(env)

    try do
      {:ok, from_env} = Storage.new(S3, bucket: "env")
      assert Storage.get(from_env, "k") == {:ok, "v"}
    after
      Enum.each(Map.keys(env), &System.delete_env/1)
    end

    assert Storage.new(S3, bucket: "env", endpoint: ctx.minio.endpoint) ==
             {:error, :missing_credentials}
  end

  test "anonymous access reads public buckets and is refused elsewhere", ctx do
    opts = MinIO.store_opts(ctx.minio, "public", "")
    :ok = Storage.put(store(opts), "zarr.json", "{}")

    anonymous =
      store([anonymous: true] ++ Keyword.drop(opts, [:access_key_id, :secret_access_key]))

    assert {:error, {:s3_error, 403, "AccessDenied", _}} = Storage.get(anonymous, "zarr.json")

    policy =
      ~s({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},) <>
        ~s("Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::public","arn:aws:s3:::public/*"]}]})

    {:ok, 204, _, _} =
      S3.Client.request(store(opts).state.client, :put, "", query: [{"policy", ""}], body: policy)

    assert Storage.get(anonymous, "zarr.json") == {:ok, "{}"}
    assert Storage.list(anonymous) == {:ok, ["zarr.json"]}
  end

  test "reads and writes succeed across a MinIO restart", ctx do
    opts =
      Keyword.merge(MinIO.store_opts(ctx.minio, "restart", ""),
        max_retries: 25,
        base_backoff: 200,
        max_backoff: 2_000
      )

    store = store(opts)
    :ok = Storage.put(store, "before", "kept")
    :ok = MinIO.pause(ctx.minio)

    reader = Task.async(fn -> Storage.get(store, "before") end)
    writer = Task.async(fn -> Storage.put(store, "during", "written") end)
    Process.sleep(300)
    :ok = MinIO.resume(ctx.minio)

    assert Task.await(reader, 60_000) == {:ok, "kept"}
    assert Task.await(writer, 60_000) == :ok
    assert Storage.get(store, "during") == {:ok, "written"}
  end

  # Without toxiproxy (no Go toolchain, no network to build it) the fault tests are skipped.
  @toxiproxy Server.install("scripts/install-toxiproxy")

  describe "through toxiproxy" do
    with {:error, reason} <- @toxiproxy do
      IO.puts("skipping the S3 fault tests: #{reason}")
      @describetag skip: "toxiproxy is not installed: #{reason}"
    end

    setup ctx do
      {:ok, toxiproxy} = Toxiproxy.start(ctx.minio.http_port)
      on_exit(fn -> Toxiproxy.stop(toxiproxy) end)
      direct = MinIO.store_opts(ctx.minio, "faults", "f#{:erlang.phash2(ctx.test)}")

      faulty =
        Keyword.merge(direct,
          endpoint: toxiproxy.endpoint,
          max_retries: 8,
          base_backoff: 100,
          max_backoff: 500,
          timeout: 5_000
        )

      %{
        toxiproxy: toxiproxy,
        # The same objects, not through the proxy: what is really stored.
        direct: store(direct),
        faulty: store(faulty),
        fragile: store(Keyword.merge(faulty, max_retries: 1, base_backoff: 10, timeout: 1_000))
      }
    end

    # Runs `fun` while the fault `type` is on, and turns it off `ms` later: a call that
    # retries long enough outlives the fault.
    defp outlasting(ctx, type, attributes, fun),
      do: Toxiproxy.outlasting(ctx.toxiproxy, type, attributes, fun)

    test "answers cut mid-way are retried and values come back whole", ctx do
      value = :crypto.strong_rand_bytes(300_000)
      :ok = Storage.put(ctx.faulty, "k", value)

      # Every connection is closed after 1,000 bytes of the answer: too few retries give an
      # error, not bad bytes; enough retries outlive the fault.
      :ok = Toxiproxy.add(ctx.toxiproxy, :limit_data, bytes: 1_000)
      assert {:error, {:http_error, _}} = Storage.get(ctx.fragile, "k")
      assert {:error, {:http_error, _}} = Storage.get(ctx.fragile, "k", {100_000, 5_000})
      :ok = Toxiproxy.remove(ctx.toxiproxy, :limit_data)

      assert outlasting(ctx, :limit_data, [bytes: 1_000], fn -> Storage.get(ctx.faulty, "k") end) ==
               {:ok, value}

      assert outlasting(ctx, :limit_data, [bytes: 10], fn -> Storage.list(ctx.faulty) end) ==
               {:ok, ["k"]}

      assert Storage.get(ctx.direct, "k") == {:ok, value}
    end

    test "connections reset before the answer: writes land once, whole", ctx do
      old = :crypto.strong_rand_bytes(300_000)
      :ok = Storage.put(ctx.direct, "k", old)
      # The request reaches MinIO, the answer is reset: the PUT may or may not have landed,
      # and the value stored is one of the two, never a mix.
      new = :crypto.strong_rand_bytes(300_000)
      :ok = Toxiproxy.add(ctx.toxiproxy, :reset_peer, ms: 0)
      assert {:error, {:http_error, _}} = Storage.put(ctx.fragile, "k", new)
      assert {:error, {:http_error, _}} = Storage.get(ctx.fragile, "k")
      assert {:ok, stored} = Storage.get(ctx.direct, "k")
      assert stored in [old, new]
      :ok = Toxiproxy.remove(ctx.toxiproxy, :reset_peer)

      newer = :crypto.strong_rand_bytes(300_000)

      assert outlasting(ctx, :reset_peer, [ms: 0], fn -> Storage.put(ctx.faulty, "k", newer) end) ==
               :ok

      assert Storage.get(ctx.direct, "k") == {:ok, newer}

      assert outlasting(ctx, :reset_peer, [ms: 0], fn -> Storage.delete(ctx.faulty, "k") end) ==
               :ok

      assert Storage.get(ctx.direct, "k") == {:error, :not_found}
    end

    test "latency slows requests down without breaking them", ctx do
      :ok = Toxiproxy.add(ctx.toxiproxy, :latency, ms: 100)
      :ok = Storage.put(ctx.faulty, "a/b", "v")
      {micros, reply} = :timer.tc(fn -> Storage.get(ctx.faulty, "a/b", {:suffix, 1}) end)
      assert reply == {:ok, "v"}
      assert micros >= 100_000
      assert Storage.list(ctx.faulty, "a") == {:ok, ["a/b"]}
      assert Storage.get(ctx.direct, "a/b") == {:ok, "v"}
    end

    test "a server that stops answering times out and loses nothing", ctx do
      :ok = Storage.put(ctx.direct, "k", "stored")
      :ok = Toxiproxy.add(ctx.toxiproxy, :timeout, ms: 0)
      assert {:error, {:http_error, _}} = Storage.get(ctx.fragile, "k")
      assert {:error, {:http_error, _}} = Storage.put(ctx.fragile, "k", "late")
      :ok = Toxiproxy.clear(ctx.toxiproxy)
      # The PUT whose answer never came may have landed; either way the value is whole.
      assert {:ok, stored} = Storage.get(ctx.direct, "k")
      assert stored in ["stored", "late"]
      assert Storage.get(ctx.faulty, "k") == {:ok, stored}
    end

    test "a network that stays down gives errors and loses nothing", ctx do
      :ok = Storage.put(ctx.faulty, "k", "stored")
      :ok = Toxiproxy.down(ctx.toxiproxy)
      assert {:error, {:http_error, _}} = Storage.put(ctx.fragile, "k", "never")
      assert {:error, {:http_error, _}} = Storage.get(ctx.fragile, "k")
      assert {:error, {:http_error, _}} = Storage.list(ctx.fragile)
      assert Storage.get(ctx.direct, "k") == {:ok, "stored"}
      :ok = Toxiproxy.up(ctx.toxiproxy)
      assert Storage.get(ctx.faulty, "k") == {:ok, "stored"}
    end

    test "a network that comes back within the retries loses no call", ctx do
      :ok = Storage.put(ctx.direct, "k", "stored")
      :ok = Toxiproxy.down(ctx.toxiproxy)
      reader = Task.async(fn -> Storage.get(ctx.faulty, "k") end)
      writer = Task.async(fn -> Storage.put(ctx.faulty, "w", "written") end)
      Process.sleep(400)
      :ok = Toxiproxy.up(ctx.toxiproxy)
      assert Task.await(reader, 60_000) == {:ok, "stored"}
      assert Task.await(writer, 60_000) == :ok
      assert Storage.get(ctx.direct, "w") == {:ok, "written"}
    end
  end

  test "with the server gone, calls give errors after their retries" do
    [port] = ExZarr.Test.Server.free_ports(1)

    store =
      store(
        endpoint: "http://127.0.0.1:#{port}",
        bucket: "b",
        anonymous: true,
        max_retries: 2,
        base_backoff: 1
      )

    assert {:error, {:http_error, _}} = Storage.get(store, "k")
    assert {:error, {:http_error, _}} = Storage.put(store, "k", "v")
    assert {:error, {:http_error, _}} = Storage.list(store)
  end

  test "bad options give errors" do
    assert Storage.new(S3, []) == {:error, {:missing_option, :bucket}}

    assert Storage.new(S3, bucket: "a/b", anonymous: true) ==
             {:error, {:invalid_option, :bucket, "a/b"}}

    assert Storage.new(S3, bucket: "b", path: "../x", anonymous: true) ==
             {:error, {:invalid_option, :path, "../x"}}

    assert Storage.new(S3, bucket: "b", path: 5, anonymous: true) ==
             {:error, {:invalid_option, :path, 5}}

    assert Storage.new(S3, bucket: "b", endpoint: "ftp://x", anonymous: true) ==
             {:error, {:invalid_option, :endpoint, "ftp://x"}}

    assert Storage.new(S3, bucket: "b", part_size: 1000, anonymous: true) ==
             {:error, {:invalid_option, :part_size, 1000}}

    assert Storage.new(S3, bucket: "b", max_retries: -1, anonymous: true) ==
             {:error, {:invalid_option, :max_retries, -1}}
  end
end

defmodule ExZarr.Storage.S3RetryTest do
  # A scripted HTTP server stands in for S3 to check what is retried and what is not.
  use ExUnit.Case, async: true

  alias ExZarr.Storage

  alias ExZarr.Test.ScriptedHTTP

  defp store(endpoint) do
    {:ok, store} =
      Storage.new(Storage.S3,
        endpoint: endpoint,
        bucket: "b",
        access_key_id: "id",
        secret_access_key: "secret",
        max_retries: 3,
        base_backoff: 1,
        timeout: 300
      )

    store
  end

  defp serve(responses) do
    responses
    |> Enum.map(fn
      {status, body} -> {status, [], body}
      other -> other
    end)
    |> ScriptedHTTP.serve()
    |> store()
  end

  defp requests, do: for({method, path, _, _} <- ScriptedHTTP.requests(), do: {method, path})

  test "503 SlowDown, 500 and connection resets are retried" do
    slow =
      "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"

    store = serve([{503, slow}, {500, ""}, :reset, {200, "data"}])
    assert Storage.get(store, "c/0") == {:ok, "data"}
    assert requests() == List.duplicate({"GET", "/b/c/0"}, 4)
  end

  test "retries stop after max_retries with the last error" do
    slow =
      "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"

    store = serve(List.duplicate({503, slow}, 4))

    assert Storage.get(store, "c/0") ==
             {:error, {:s3_error, 503, "SlowDown", "Please reduce your request rate."}}

    assert length(requests()) == 4
  end

  test "a server that does not answer times out, and the request is retried" do
    store = serve([:silence, :silence, {200, "late"}])
    assert Storage.get(store, "k") == {:ok, "late"}
    assert length(requests()) == 3
    store = serve(List.duplicate(:silence, 4))
    assert Storage.get(store, "k") == {:error, {:http_error, :timeout}}
  end

  test "client errors are not retried; a missing key is :not_found" do
    store =
      serve([
        {404, "<Error><Code>NoSuchKey</Code></Error>"},
        {403, "<Error><Code>AccessDenied</Code><Message>no &amp; never</Message></Error>"}
      ])

    assert Storage.get(store, "k") == {:error, :not_found}
    assert Storage.get(store, "k") == {:error, {:s3_error, 403, "AccessDenied", "no & never"}}
    assert length(requests()) == 2
  end
end
