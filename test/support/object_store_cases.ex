defmodule ExZarr.Test.ObjectStoreCases do
  @moduledoc """
  What every object-store backend's tests (GCS, Azure) share beyond the conformance suite:
  the emulator, and tests of URLs naming the bucket and prefix, paged listings and
  `list_dir`, values over 100 MB, and a whole array written with
  `ExZarr.create` and read back through a URL.

      use ExZarr.Test.ObjectStoreCases,
        server: ExZarr.Test.FakeGCS,
        backend: ExZarr.Storage.GCS,
        scheme: "gs://",
        bucket_option: :bucket

  The emulator module has `install/0`, `start!/1`, `stop/1` and `store_opts(server, bucket,
  path)` (the options of a store at `path` in `bucket`, which it creates). It is installed
  (or found in its cache) when the test file compiles; when it cannot be, every test of the
  module is skipped with the reason printed. Otherwise one server runs for the module, in
  `ctx.server`.
  """

  defmacro __using__(opts) do
    backend = Keyword.fetch!(opts, :backend)
    scheme = Keyword.fetch!(opts, :scheme)
    bucket_option = Keyword.fetch!(opts, :bucket_option)
    server = Keyword.fetch!(opts, :server)

    quote do
      @install unquote(server).install()

      with {:error, reason} <- @install do
        IO.puts("Skipping #{inspect(__MODULE__)}: the emulator is not available (#{reason})")
        @moduletag skip: "the emulator is not available"
      end

      setup_all do
        with {:ok, bin} <- @install do
          server = unquote(server).start!(bin)
          on_exit(fn -> unquote(server).stop(server) end)
          %{server: server}
        end
      end

      describe "object store:" do
        setup ctx do
          opts_fun = &unquote(server).store_opts(&1.server, &2, &3)
          scheme = unquote(scheme)

          at = fn bucket, path ->
            {:ok, store} =
              ExZarr.storage(
                opts_fun.(ctx, bucket, "")
                |> Keyword.delete(unquote(bucket_option))
                |> Keyword.put(:path, scheme <> bucket <> "/" <> path)
              )

            store
          end

          %{at: at, opts_fun: opts_fun}
        end

        test "a URL names the bucket and the prefix; sibling prefixes stay apart", ctx do
          one = ctx.at.("urls", "deep/a.zarr/")
          assert one.module == unquote(backend)
          two = ctx.at.("urls", "deep/b.zarr")
          whole = ctx.at.("urls", "")
          :ok = ExZarr.Storage.put(one, "c/0", "1")
          :ok = ExZarr.Storage.put(two, "c/0", "2")
          assert ExZarr.Storage.list(one) == {:ok, ["c/0"]}
          assert ExZarr.Storage.get(two, "c/0") == {:ok, "2"}
          assert ExZarr.Storage.list(whole) == {:ok, ["deep/a.zarr/c/0", "deep/b.zarr/c/0"]}
          assert ExZarr.Storage.get(whole, "deep/a.zarr/c/0") == {:ok, "1"}
        end

        test "listings go page by page; list_dir lists one level with the delimiter", ctx do
          {:ok, store} =
            ExZarr.Storage.new(
              unquote(backend),
              ctx.opts_fun.(ctx, "pages", "p") ++ [list_page_size: 3]
            )

          keys = for i <- 1..7, do: "c/#{i}"
          keys = keys ++ ["zarr.json", "g/zarr.json", "g/a/zarr.json", "g/b/c/0", "g/bz"]
          for k <- keys, do: :ok = ExZarr.Storage.put(store, k, k)
          assert ExZarr.Storage.list(store) == {:ok, Enum.sort(keys)}

          assert ExZarr.Storage.list(store, "g") ==
                   {:ok, ["g/a/zarr.json", "g/b/c/0", "g/bz", "g/zarr.json"]}

          assert ExZarr.Storage.list_dir(store, "") ==
                   {:ok, %{keys: ["zarr.json"], prefixes: ["c", "g"]}}

          assert ExZarr.Storage.list_dir(store, "g") ==
                   {:ok, %{keys: ["bz", "zarr.json"], prefixes: ["a", "b"]}}

          assert ExZarr.Storage.list_dir(store, "nothing") == {:ok, %{keys: [], prefixes: []}}
        end

        @tag timeout: 600_000
        test "values over 100 MB go up in parts and come back whole", ctx do
          store = ctx.at.("huge", "h")
          value = :binary.copy(:crypto.strong_rand_bytes(1024 * 1024), 110)
          :ok = ExZarr.Storage.put(store, "big", value)

          assert ExZarr.Storage.get(store, "big", {:suffix, 10}) ==
                   {:ok, binary_part(value, byte_size(value) - 10, 10)}

          assert ExZarr.Storage.get(store, "big") == {:ok, value}
        end

        test "an array written with ExZarr.create reads back through a URL", ctx do
          data = for i <- 0..29, into: <<>>, do: <<i / 4::little-float-32>>

          for fmt <- [2, 3] do
            {:ok, array} =
              ExZarr.create(
                storage: ctx.at.("arrays", "a#{fmt}.zarr"),
                shape: {6, 5},
                chunks: {4, 3},
                dtype: :float32,
                zarr_format: fmt,
                compressor: %{id: "zlib", level: 1},
                fill_value: 0.0
              )

            :ok = ExZarr.Array.set_slice(array, data, start: {0, 0}, stop: {6, 5})
            url = unquote(scheme) <> "arrays/a#{fmt}.zarr"
            opts = ctx.opts_fun.(ctx, "arrays", "") |> Keyword.delete(unquote(bucket_option))
            {:ok, reopened} = ExZarr.open(Keyword.put(opts, :path, url))
            assert ExZarr.Array.get_slice(reopened, start: {0, 0}, stop: {6, 5}) == {:ok, data}
          end
        end
      end
    end
  end
end
