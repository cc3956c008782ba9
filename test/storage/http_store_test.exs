defmodule ExZarr.Storage.HTTPStoreTest do
  @moduledoc """
  The read-only HTTP(S) store against nginx serving trees that zarr-python wrote (v2 and v3,
  consolidated, sharded): exact reads, what a sharded cutout transfers (nginx's log), ranges,
  redirects, headers, errors, HTTPS with a test CA, and faults through toxiproxy.
  """
  # One nginx for the module; the request-counting test reads its log, so not async.
  use ExUnit.Case, async: false
  @moduletag timeout: 180_000

  alias ExZarr.{Array, Group, Storage}
  alias ExZarr.Storage.HTTPStore
  alias ExZarr.Test.{Nginx, Python, Server, Toxiproxy}

  @fixture """
  import json, os, sys, warnings
  import numpy as np, zarr
  warnings.simplefilter("ignore")
  root, expect = sys.argv[1], sys.argv[2]
  os.makedirs(expect, exist_ok=True)
  rng = np.random.default_rng(7)

  def save(name, a):
      np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tofile(os.path.join(expect, name))

  for fmt in (2, 3):
      path = f"{root}/v{fmt}/tree.zarr"
      g = zarr.open_group(path, mode="w", zarr_format=fmt)
      g.attrs["title"] = f"v{fmt} over http"
      t = g.create_array("temps", shape=(50, 40), chunks=(16, 16), dtype="float64", fill_value=-1.5)
      data = rng.standard_normal((50, 40))
      data[32:, 32:] = -1.5  # a chunk never written: read as the fill value
      t[:32, :] = data[:32, :]
      t[32:, :32] = data[32:, :32]
      save(f"v{fmt}_temps", data)
      c = g.create_group("obs/station").create_array("counts", shape=(1000,), chunks=(64,), dtype="int32")
      c[:] = np.arange(1000, dtype="int32") * 3
      save(f"v{fmt}_counts", c[:])
      if fmt == 3:
          img = g.create_array("img", shape=(64, 48), chunks=(8, 8), shards=(32, 16), dtype="uint16")
          data = rng.integers(0, 60000, (64, 48), dtype="uint16")
          data[32:, :16] = 0  # a shard never written
          img[:32, :] = data[:32, :]
          img[32:, 16:] = data[32:, 16:]
          save("v3_img", data)
      zarr.consolidate_metadata(path)
      p = zarr.open_group(f"{root}/v{fmt}/plain.zarr", mode="w", zarr_format=fmt)
      x = p.create_array("x", shape=(10,), chunks=(4,), dtype="uint16")
      x[:] = np.arange(10, dtype="uint16")
      save(f"v{fmt}_x", x[:])

  s = zarr.create_array(f"{root}/v3/sharded.zarr", shape=(1024, 1024), chunks=(128, 128),
                        shards=(512, 512), dtype="float64", zarr_format=3)
  data = rng.standard_normal((1024, 1024))
  s[:] = data
  save("sharded", data)
  with open(f"{root}/bytes", "wb") as f:
      f.write(bytes(range(256)) * 4)
  """

  setup_all do
    dir = ExZarr.Test.Tmp.path("ex_zarr_http_")
    root = Path.join(dir, "root")
    expect = Path.join(dir, "expect")
    Python.run!(@fixture, [root, expect])

    case Nginx.start(root, tls: true) do
      {:ok, nginx} ->
        on_exit(fn ->
          Nginx.stop(nginx)
          File.rm_rf!(dir)
        end)

        %{nginx: nginx, root: root, expect: expect, base: Nginx.url(nginx)}

      {:error, reason} ->
        File.rm_rf!(dir)
        raise "nginx is needed for the HTTP store tests: #{reason}"
    end
  end

  defp expected(ctx, name), do: File.read!(Path.join(ctx.expect, name))

  defp store!(opts) do
    {:ok, store} = Storage.new(:http, opts)
    store
  end

  defp read_all(%Array{} = a) do
    Array.get_slice(a,
      start: Tuple.duplicate(0, tuple_size(a.metadata.shape)),
      stop: a.metadata.shape
    )
  end

  describe "reading what zarr-python wrote" do
    test "consolidated v2 and v3 trees open from a URL and read exactly", ctx do
      for fmt <- [2, 3] do
        url = "#{ctx.base}/v#{fmt}/tree.zarr"
        assert {:ok, %Group{} = root} = ExZarr.open(url)
        assert root.metadata.attributes["title"] == "v#{fmt} over http"
        assert {:ok, tree} = ExZarr.tree(root)
        assert tree =~ "temps"
        assert tree =~ "counts"

        assert {:ok, temps} = Group.open(root, "temps")
        assert read_all(temps) == {:ok, expected(ctx, "v#{fmt}_temps")}
        assert {:ok, counts} = Group.open(root, "obs/station/counts")
        assert read_all(counts) == {:ok, expected(ctx, "v#{fmt}_counts")}
        # A member opened by its own URL.
        assert {:ok, %Array{} = direct} = ExZarr.open(url <> "/obs/station/counts")

        assert Array.get_slice(direct, start: {10}, stop: {20}) ==
                 {:ok, binary_part(expected(ctx, "v#{fmt}_counts"), 40, 40)}
      end
    end

    test "sharded arrays, in a consolidated group and alone, read exactly", ctx do
      {:ok, root} = ExZarr.open_group(storage: :http, url: "#{ctx.base}/v3/tree.zarr")
      {:ok, img} = Group.open(root, "img")
      assert read_all(img) == {:ok, expected(ctx, "v3_img")}

      {:ok, sharded} = ExZarr.open("#{ctx.base}/v3/sharded.zarr")
      assert read_all(sharded) == {:ok, expected(ctx, "sharded")}
      assert {:ok, cutout} = Array.get_slice(sharded, start: {500, 7}, stop: {530, 900})
      assert cutout == cut(expected(ctx, "sharded"), 1024, 8, {500, 7}, {530, 900})
    end

    # Reads rows 100..199 and columns 500..529 of the sharded array at `url`, checks them and
    # returns the requests nginx served for it. The rows are inner chunk rows 0..1 and the
    # columns inner columns 3 (shard 0) and 4 (shard 1, its column 0): 4 of the 32 inner
    # chunks of the two shards (about 125 KB each).
    defp exact_cutout(ctx, url) do
      {:ok, sharded} = ExZarr.open(url)
      Nginx.clear_requests(ctx.nginx)
      {:ok, cutout} = Array.get_slice(sharded, start: {100, 500}, stop: {200, 530})
      assert cutout == cut(expected(ctx, "sharded"), 1024, 8, {100, 500}, {200, 530})
      Nginx.requests(ctx.nginx)
    end

    test "a sharded cutout transfers the indexes and the inner chunks it needs, no more", ctx do
      requests = exact_cutout(ctx, "#{ctx.base}/v3/sharded.zarr")
      shard_reads = for %{uri: "/v3/sharded.zarr/c/" <> shard} = r <- requests, do: {shard, r}

      # Each index once (a suffix range), then only the needed inner chunks' bytes.
      index_bytes = 16 * 16 + 4

      for shard <- ["0/0", "0/1"] do
        reads = for {^shard, r} <- shard_reads, do: r
        assert Enum.all?(reads, &(&1.status == 206)), inspect(reads)

        assert [%{bytes: ^index_bytes, range: "bytes=-260"}] =
                 Enum.filter(reads, &(&1.range == "bytes=-260"))

        index = shard_index(Path.join(ctx.root, "v3/sharded.zarr/c/" <> shard))
        wanted = if shard == "0/0", do: [3, 7], else: [0, 4]
        needed = wanted |> Enum.map(&elem(Enum.at(index, &1), 1)) |> Enum.sum()
        assert Enum.sum(Enum.map(reads, & &1.bytes)) == index_bytes + needed
      end

      assert shard_reads |> Enum.map(&elem(&1, 0)) |> Enum.uniq() |> Enum.sort() == ["0/0", "0/1"]
    end

    test "a server that ignores Range still gives exact reads", ctx do
      requests = exact_cutout(ctx, "#{ctx.base}/norange/v3/sharded.zarr")
      # Every ranged read came back whole (200) and was cut here.
      assert [_ | _] = reads = Enum.filter(requests, &(&1.range != nil))
      assert Enum.all?(reads, &(&1.status == 200))

      store = store!(url: "#{ctx.base}/norange")
      bytes = File.read!(Path.join(ctx.root, "bytes"))

      for range <- [{10, 5}, {1000, 100}, {2000, 4}, {:suffix, 7}, {:suffix, 5000}] do
        assert Storage.get(store, "bytes", range) == {:ok, Storage.Range.slice(bytes, range)}
      end
    end
  end

  describe "the store" do
    test "byte ranges and suffixes, clamped at the end like the other stores", ctx do
      store = store!(url: ctx.base)
      bytes = File.read!(Path.join(ctx.root, "bytes"))
      assert Storage.get(store, "bytes") == {:ok, bytes}

      for range <-
            [{0, 1}, {10, 5}, {1020, 100}, {1024, 3}, {5000, 1}, {:suffix, 7}] ++
              [{:suffix, 1024}, {:suffix, 5000}, {3, 0}, {:suffix, 0}] do
        assert Storage.get(store, "bytes", range) == {:ok, Storage.Range.slice(bytes, range)},
               inspect(range)
      end

      assert Storage.get_ranges(store, "bytes", [{1, 2}, {:suffix, 2}]) ==
               {:ok, [<<1, 2>>, <<254, 255>>]}
    end

    test "missing keys are :not_found, forbidden ones {:forbidden, key}", ctx do
      store = store!(url: ctx.base)
      assert Storage.get(store, "nothing/here") == {:error, :not_found}
      assert Storage.get(store, "nothing/here", {:suffix, 10}) == {:error, :not_found}
      # A read of no bytes asks whether the key exists (HEAD).
      assert Storage.get(store, "nothing/here", {0, 0}) == {:error, :not_found}
      assert Storage.get(store, "bytes", {0, 0}) == {:ok, ""}

      private = store!(url: ctx.base <> "/private")
      assert Storage.get(private, "bytes") == {:error, {:forbidden, "bytes"}}

      assert ExZarr.open(ctx.base <> "/private/v3/tree.zarr") ==
               {:error, {:forbidden, "zarr.json"}}
    end

    test "keys are percent-encoded; a query in the URL goes with every key", ctx do
      File.mkdir_p!(Path.join(ctx.root, "odd dir"))
      File.write!(Path.join(ctx.root, "odd dir/ü #1"), "odd")
      store = store!(url: ctx.base <> "/")
      assert Storage.get(store, "odd dir/ü #1") == {:ok, "odd"}
      Nginx.clear_requests(ctx.nginx)
      queried = store!(url: ctx.base <> "/v2/tree.zarr?sig=abc%2F1")
      assert {:ok, _} = Storage.get(queried, ".zgroup")
      assert [%{uri: "/v2/tree.zarr/.zgroup?sig=abc%2F1"}] = Nginx.requests(ctx.nginx)
    end

    test "headers are sent (tokens), and only to the store's own server", ctx do
      token = [{"Authorization", "Bearer " <> Nginx.token()}]

      assert Storage.get(store!(url: ctx.base <> "/token"), "bytes") ==
               {:error, {:http_status, 401, "bytes"}}

      {:ok, tree} = ExZarr.open_group(path: ctx.base <> "/token/v3/tree.zarr", headers: token)
      {:ok, counts} = Group.open(tree, "obs/station/counts")
      assert read_all(counts) == {:ok, expected(ctx, "v3_counts")}

      # Kept through a redirect on the same server, dropped on one to another origin
      # (localhost is not 127.0.0.1).
      moved = store!(url: ctx.base <> "/moved/token", headers: token)
      assert Storage.get(moved, "bytes", {0, 2}) == {:ok, <<0, 1>>}
      away = store!(url: ctx.base <> "/tolocalhost/token", headers: token)
      assert Storage.get(away, "bytes") == {:error, {:http_status, 401, "bytes"}}

      assert Storage.get(store!(url: ctx.base <> "/tolocalhost"), "bytes", {0, 2}) ==
               {:ok, <<0, 1>>}
    end

    test "redirects are followed", ctx do
      {:ok, a} = ExZarr.open(ctx.base <> "/moved/v2/tree.zarr/temps")
      assert read_all(a) == {:ok, expected(ctx, "v2_temps")}
      store = store!(url: ctx.base <> "/moved")
      assert Storage.get(store, "bytes", {:suffix, 2}) == {:ok, <<254, 255>>}
      assert Storage.get(store, "absent") == {:error, :not_found}
    end

    test "a body with a Content-Encoding is refused, not taken for the value", ctx do
      store = store!(url: ctx.base <> "/encoded")

      assert Storage.get(store, "bytes") ==
               {:error, {:http_error, {:unsupported_content_encoding, "gzip"}}}
    end

    test "listing is not possible: groups open through consolidated metadata or by path", ctx do
      store = store!(url: ctx.base <> "/v3/plain.zarr")
      assert {:error, {:not_supported, message}} = Storage.list(store)
      assert message =~ "consolidated metadata"
      assert {:error, {:not_supported, _}} = Storage.list_dir(store, "")

      for fmt <- [2, 3] do
        url = "#{ctx.base}/v#{fmt}/plain.zarr"
        {:ok, group} = ExZarr.open(url)
        assert {:error, {:not_supported, ^message}} = ExZarr.tree(group)

        assert {:error, :no_consolidated_metadata} =
                 ExZarr.open_group(path: url, use_consolidated: true)

        # Members open by path.
        assert {:ok, x} = Group.open(group, "x")
        assert read_all(x) == {:ok, expected(ctx, "v#{fmt}_x")}
      end
    end

    test "writes and deletes are :read_only", ctx do
      url = ctx.base <> "/v3/tree.zarr"
      store = store!(url: url)
      assert Storage.put(store, "k", "v") == {:error, :read_only}
      assert Storage.delete(store, "zarr.json") == {:error, :read_only}
      {:ok, temps} = ExZarr.open(url <> "/temps")

      assert Array.set_slice(temps, <<0::64>>, start: {0, 0}, stop: {1, 1}) ==
               {:error, :read_only}

      assert ExZarr.create(path: ctx.base <> "/new.zarr", shape: {4}, chunks: {2}, dtype: :int8) ==
               {:error, :read_only}

      assert read_all(temps) == {:ok, expected(ctx, "v3_temps")}
    end

    test "bad options give errors" do
      assert Storage.new(:http, []) == {:error, {:missing_option, :url}}

      assert Storage.new(:http, url: "ftp://x/y") ==
               {:error, {:invalid_option, :url, "ftp://x/y"}}

      assert Storage.new(:http, url: 5) == {:error, {:invalid_option, :url, 5}}
      assert Storage.new(:http, url: "http://") == {:error, {:invalid_option, :url, "http://"}}
      assert Storage.new(:http, path: "/local") == {:error, {:invalid_option, :path, "/local"}}

      assert {:error, {:invalid_option, :url, message}} =
               Storage.new(:http, url: "https://user:pw@host/a")

      refute message =~ "pw"

      for headers <- [[{"x", 1}], [{"a\r\nb", "c"}], [{"x", "a\nb"}], [{"host", "h"}], %{}, [:x]] do
        assert {:error, {:invalid_option, :headers, _}} =
                 Storage.new(:http, url: "http://h/", headers: headers)
      end

      assert Storage.new(:http, url: "https://h/", cacertfile: "/nonexistent.pem") ==
               {:error, {:invalid_option, :cacertfile, "/nonexistent.pem"}}

      assert Storage.new(:http,
               url: "https://h/",
               cacertfile: "/etc/hosts",
               ssl: [verify: :verify_none]
             ) ==
               {:error, {:conflicting_options, [:cacertfile, :ssl]}}

      assert Storage.new(:http, url: "http://h/", max_retries: -1) ==
               {:error, {:invalid_option, :max_retries, -1}}
    end

    test "tokens and signed URLs stay out of inspect" do
      store = store!(url: "http://h/a.zarr?sig=secret1", headers: [{"authorization", "secret2"}])
      assert %HTTPStore{} = store.state
      refute inspect(store) =~ "secret"
    end
  end

  describe "https" do
    @tag capture_log: true
    test "the server is verified: refused without its CA, read with cacertfile:", ctx do
      url = Nginx.url(ctx.nginx, :https) <> "/v3/tree.zarr"

      assert {:error, {:http_error, {:tls_alert, {:unknown_ca, _}}}} =
               ExZarr.open(path: url, max_retries: 0)

      for url <- [url, "https://localhost:#{ctx.nginx.https_port}/v3/tree.zarr"] do
        {:ok, tree} = ExZarr.open_group(path: url, cacertfile: ctx.nginx.ca)
        {:ok, img} = Group.open(tree, "img")
        assert read_all(img) == {:ok, expected(ctx, "v3_img")}
      end
    end
  end

  describe "through toxiproxy" do
    # Without toxiproxy (no Go toolchain, no network to build it) these tests are skipped.
    case Server.install("scripts/install-toxiproxy") do
      {:ok, _bin} -> :ok
      {:error, reason} -> @describetag skip: "toxiproxy is not installed: #{reason}"
    end

    setup ctx do
      {:ok, toxiproxy} = Toxiproxy.start(ctx.nginx.http_port)
      on_exit(fn -> Toxiproxy.stop(toxiproxy) end)

      faulty = [
        path: toxiproxy.endpoint <> "/v3/sharded.zarr",
        max_retries: 8,
        base_backoff: 100,
        max_backoff: 500,
        timeout: 5_000
      ]

      fragile = Keyword.merge(faulty, max_retries: 1, base_backoff: 10, timeout: 1_000)
      %{toxiproxy: toxiproxy, faulty: faulty, fragile: fragile}
    end

    test "answers cut mid-way are errors or, retried, whole values; never wrong data", ctx do
      want = cut(expected(ctx, "sharded"), 1024, 8, {0, 0}, {600, 600})
      {:ok, fragile} = ExZarr.open(ctx.fragile)
      {:ok, faulty} = ExZarr.open(ctx.faulty)
      :ok = Toxiproxy.add(ctx.toxiproxy, :limit_data, bytes: 1_000)
      assert {:error, _} = Array.get_slice(fragile, start: {0, 0}, stop: {600, 600})
      :ok = Toxiproxy.remove(ctx.toxiproxy, :limit_data)

      assert Toxiproxy.outlasting(ctx.toxiproxy, :limit_data, [bytes: 1_000], fn ->
               Array.get_slice(faulty, start: {0, 0}, stop: {600, 600})
             end) == {:ok, want}
    end

    # Reads the 10 x 10 corner of the sharded array: {microseconds, reply}.
    defp timed_corner(array),
      do: :timer.tc(fn -> Array.get_slice(array, start: {0, 0}, stop: {10, 10}) end)

    defp corner(ctx), do: {:ok, cut(expected(ctx, "sharded"), 1024, 8, {0, 0}, {10, 10})}

    test "latency slows reads down without breaking them", ctx do
      {:ok, faulty} = ExZarr.open(ctx.faulty)
      :ok = Toxiproxy.add(ctx.toxiproxy, :latency, ms: 100)
      {micros, reply} = timed_corner(faulty)
      assert reply == corner(ctx)
      assert micros >= 100_000
    end

    test "a silent server is an error within the timeout", ctx do
      {:ok, fragile} = ExZarr.open(ctx.fragile)
      :ok = Toxiproxy.add(ctx.toxiproxy, :timeout, ms: 0)
      {micros, reply} = timed_corner(fragile)
      assert {:error, _} = reply
      # Two attempts of 1 s each and a short backoff, for the index and once more with fresh
      # indexes (a sharded read that fails is retried once).
      assert micros < 6_000_000
      :ok = Toxiproxy.clear(ctx.toxiproxy)
      assert elem(timed_corner(fragile), 1) == corner(ctx)
    end

    test "a server that goes away gives errors; one that comes back within the retries none",
         ctx do
      {:ok, fragile} = ExZarr.open(ctx.fragile)
      {:ok, faulty} = ExZarr.open(ctx.faulty)
      :ok = Toxiproxy.down(ctx.toxiproxy)
      assert {:error, _} = elem(timed_corner(fragile), 1)
      reader = Task.async(fn -> timed_corner(faulty) end)
      Process.sleep(400)
      :ok = Toxiproxy.up(ctx.toxiproxy)
      assert elem(Task.await(reader, 60_000), 1) == corner(ctx)
    end
  end

  # The box start..stop of a 2-d C-order array `columns` wide with `size`-byte items.
  defp cut(data, columns, size, {r0, c0}, {r1, c1}) do
    for row <- r0..(r1 - 1), into: <<>> do
      binary_part(data, (row * columns + c0) * size, (c1 - c0) * size)
    end
  end

  # The {offset, nbytes} entries of a shard's index (at its end, with a crc32c).
  defp shard_index(path) do
    shard = File.read!(path)

    <<index::binary-size(256), _crc::binary-size(4)>> =
      binary_part(shard, byte_size(shard) - 260, 260)

    for <<offset::little-64, nbytes::little-64 <- index>>, do: {offset, nbytes}
  end
end

defmodule ExZarr.Storage.HTTPStoreAnswersTest do
  # A scripted server checks how answers that nginx never gives are taken.
  use ExUnit.Case, async: true

  alias ExZarr.Storage
  alias ExZarr.Test.ScriptedHTTP

  defp store(endpoint) do
    {:ok, store} =
      Storage.new(:http, url: endpoint <> "/a.zarr", max_retries: 2, base_backoff: 1, timeout: 500)

    store
  end

  test "a 206 for another range than the one asked is an error, not the wrong bytes" do
    store =
      store(
        ScriptedHTTP.serve([
          {206, [{"content-range", "bytes 0-2/10"}], "012"},
          {206, [{"content-range", "bytes 7-9/10"}], "789"},
          {206, [{"content-range", "bytes 5-9/10"}], "56789"},
          {206, [{"content-range", "bytes 2-4/10"}], "2345"},
          {206, [{"content-range", "junk"}], "234"}
        ])
      )

    assert Storage.get(store, "k", {2, 3}) ==
             {:error, {:http_error, {:bad_content_range, "bytes 0-2/10"}}}

    assert Storage.get(store, "k", {:suffix, 3}) == {:ok, "789"}
    # A suffix must end at the end, and be no longer than asked.
    assert {:error, _} = Storage.get(store, "k", {:suffix, 3})
    assert {:error, _} = Storage.get(store, "k", {2, 3})
    assert {:error, _} = Storage.get(store, "k", {2, 3})
  end

  test "transient statuses and resets are retried; redirect loops end" do
    endpoint =
      ScriptedHTTP.serve(fn endpoint ->
        [{503, [], ""}, :reset, {200, [], "value"}] ++
          List.duplicate({302, [{"location", endpoint <> "/a.zarr/loop"}], ""}, 6)
      end)

    store = store(endpoint)
    assert Storage.get(store, "k") == {:ok, "value"}
    assert Storage.get(store, "loop") == {:error, {:http_status, 302, "loop"}}
    assert length(ScriptedHTTP.requests()) == 9
  end

  test "a silent server times out, after the retries" do
    store = store(ScriptedHTTP.serve(List.duplicate(:silence, 3)))
    assert Storage.get(store, "k") == {:error, {:http_error, :timeout}}
  end
end
