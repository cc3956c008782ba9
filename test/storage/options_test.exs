defmodule ExZarr.Storage.OptionsTest do
  # Storage options: every backend refuses the ones it does not know, the facade gives each
  # backend only its own, and URLs of schemes ExZarr does not serve never become local paths.
  use ExUnit.Case, async: true

  alias ExZarr.Storage

  doctest ExZarr.Storage
  doctest ExZarr.Storage.Keys

  @moduletag :tmp_dir

  # Options each backend opens with (object stores: an endpoint nobody listens on, as init
  # makes no request).
  defp valid_opts(:memory, _dir), do: [owner: self()]
  defp valid_opts(:ets, _dir), do: [table_name: :options_test_ets]
  defp valid_opts(:filesystem, dir), do: [path: dir, fsync: true, check_symlinks: false]
  defp valid_opts(:zip, dir), do: [path: Path.join(dir, "a.zip"), mode: :write, owner: self()]
  defp valid_opts(:mnesia, _dir), do: [table_name: :options_test_mnesia]
  defp valid_opts(:cache, _dir), do: [inner: {:memory, []}, max_bytes: 1000, owner: self()]

  defp valid_opts(:s3, _dir),
    do: [bucket: "b", endpoint: "http://127.0.0.1:1", anonymous: true, max_retries: 0]

  defp valid_opts(:gcs, _dir), do: [bucket: "b", endpoint: "http://127.0.0.1:1", timeout: 10]

  defp valid_opts(:azure, _dir),
    do: [container: "c", account: "acct", endpoint: "http://127.0.0.1:1/acct"]

  @backends [:memory, :ets, :filesystem, :zip, :mnesia, :s3, :gcs, :azure, :cache]

  for backend <- @backends do
    test "#{backend} opens with its options and refuses any other", %{tmp_dir: dir} do
      backend = unquote(backend)
      opts = valid_opts(backend, dir)
      {:ok, names} = Storage.option_names(backend)
      assert Keyword.keys(opts) -- names == []

      for bad <- [:shape, :tabel_name, :pth, :chunks] do
        assert Storage.new(backend, opts ++ [{bad, 1}]) == {:error, {:unknown_option, bad}}
      end

      assert {:ok, store} = Storage.new(backend, opts)
      Storage.close(store)
      if backend == :mnesia, do: {:atomic, :ok} = :mnesia.delete_table(:options_test_mnesia)
      if backend == :ets, do: Storage.ETS.drop(:options_test_ets)
    end
  end

  test "the cache refuses unknown options of the store behind it" do
    assert Storage.new(:cache, inner: {:memory, [path: "x"]}) ==
             {:error, {:inner_store, {:unknown_option, :path}}}
  end

  test "options that are not a keyword list, or an unknown backend, are errors" do
    assert Storage.new(:memory, :nope) == {:error, {:invalid_options, :nope}}
    assert Storage.new(:memory, [1, 2]) == {:error, {:invalid_options, [1, 2]}}
    assert Storage.new("memory", []) == {:error, {:unknown_storage, "memory"}}

    assert Storage.new(NoSuchBackendModule, []) ==
             {:error, {:unknown_storage, NoSuchBackendModule}}

    assert Storage.option_names(:nope) == {:error, {:unknown_storage, :nope}}
  end

  test "boolean options are booleans", %{tmp_dir: dir} do
    assert Storage.new(:filesystem, path: dir, fsync: "yes") ==
             {:error, {:invalid_option, :fsync, "yes"}}

    assert Storage.new(:filesystem, path: dir, check_symlinks: nil) ==
             {:error, {:invalid_option, :check_symlinks, nil}}

    assert Storage.new(:s3, bucket: "b", endpoint: "http://127.0.0.1:1", anonymous: 1) ==
             {:error, {:invalid_option, :anonymous, 1}}
  end

  test "bad prefixes and range lists are errors, not raises" do
    {:ok, store} = Storage.new(:memory, owner: self())
    assert Storage.list(store, :c) == {:error, {:invalid_key, :c}}
    assert Storage.list_dir(store, 5) == {:error, {:invalid_key, 5}}
    assert Storage.delete_prefix(store, nil) == {:error, {:invalid_key, nil}}
    assert Storage.get_ranges(store, "k", {0, 1}) == {:error, {:invalid_ranges, {0, 1}}}
  end

  test "delete_prefix deletes the keys below a prefix only" do
    {:ok, store} = Storage.new(:memory, owner: self())

    for key <- ["a/zarr.json", "a/c/0", "ab/zarr.json", "zarr.json"],
        do: :ok = Storage.put(store, key, "v")

    assert Storage.delete_prefix(store, "a/") == :ok
    assert Storage.list(store) == {:ok, ["ab/zarr.json", "zarr.json"]}
    assert Storage.delete_prefix(store, "") == :ok
    assert Storage.list(store) == {:ok, []}
  end

  describe "the facade" do
    @array [shape: {4}, chunks: {2}, dtype: :uint8]

    test "gives each backend only its own options", %{tmp_dir: dir} do
      name = :options_test_facade
      on_exit(fn -> Storage.ETS.drop(name) end)

      assert {:ok, a} = ExZarr.create([storage: :ets, table_name: name] ++ @array)
      assert a.storage.state.table == name
      assert {:ok, _} = ExZarr.create([path: dir, fsync: true, overwrite: true] ++ @array)
      assert {:ok, %ExZarr.Array{}} = ExZarr.open(path: dir, fsync: true)
      assert {:ok, _} = ExZarr.create([storage: :memory, owner: self()] ++ @array)
    end

    test "refuses storage options the backend does not take", %{tmp_dir: dir} do
      assert ExZarr.create([storage: :memory, path: dir] ++ @array) ==
               {:error, {:unknown_option, :path}}

      assert ExZarr.create([path: dir, fsync: :sometimes] ++ @array) ==
               {:error, {:invalid_option, :fsync, :sometimes}}

      {:ok, store} = Storage.new(:memory, owner: self())

      assert ExZarr.create([storage: store, path: dir] ++ @array) ==
               {:error, {:unknown_option, :path}}
    end

    test "split_storage_options/1 separates the storage's options from the others" do
      assert ExZarr.split_storage_options(storage: :ets, table_name: :t, shape: {4}) ==
               {:ok, [storage: :ets, table_name: :t], [shape: {4}]}

      assert ExZarr.split_storage_options(path: "s3://b/x", region: "r", dtype: :int8, cache: 9) ==
               {:ok, [path: "s3://b/x", region: "r", cache: 9], [dtype: :int8]}

      assert ExZarr.split_storage_options(path: "/d", table_name: :t) ==
               {:ok, [path: "/d"], [table_name: :t]}

      assert ExZarr.split_storage_options(storage: :nope) == {:error, {:unknown_storage, :nope}}

      assert ExZarr.split_storage_options(%{path: "/d"}) ==
               {:error, {:invalid_options, %{path: "/d"}}}
    end
  end

  describe "URLs" do
    @array [shape: {4}, chunks: {2}, dtype: :uint8]

    test "schemes ExZarr does not serve are refused, never made local paths" do
      # (http and https are left out: they belong to the HTTP store.)
      for {url, scheme} <- [
            {"ftp://host/x.zarr", "ftp"},
            {"FTP://host/x.zarr", "ftp"},
            {"gopher://host/x.zarr", "gopher"},
            {"hdfs://namenode/x.zarr", "hdfs"},
            {"s3a://bucket/x.zarr", "s3a"},
            {"memory://x", "memory"}
          ] do
        error = {:error, {:unsupported_url_scheme, scheme}}
        assert ExZarr.create([path: url] ++ @array) == error
        assert ExZarr.open(url) == error
        assert ExZarr.open(path: url) == error
        assert ExZarr.create_group(path: url) == error
        assert ExZarr.storage(storage: :filesystem, path: url) == error
        assert ExZarr.storage(storage: :zip, path: url, mode: :write) == error
        assert Storage.url_backend(url) == error
      end

      for dir <- ["ftp:", "FTP:", "gopher:", "hdfs:", "s3a:", "memory:"],
          do: refute(File.exists?(Path.expand(dir)))
    end

    test "file:// URLs name local paths", %{tmp_dir: dir} do
      assert {:ok, _} = ExZarr.create([path: "file://" <> dir] ++ @array)
      assert File.exists?(Path.join(dir, "zarr.json"))
      assert {:ok, %ExZarr.Array{}} = ExZarr.open("file://localhost" <> dir)
      assert {:ok, %ExZarr.Array{}} = ExZarr.open(path: dir, storage: :filesystem)

      assert ExZarr.open("file://otherhost" <> dir) ==
               {:error, {:invalid_path, "file://otherhost" <> dir}}
    end

    test "zip:// and file:// URLs name zip files", %{tmp_dir: dir} do
      zip = Path.join(dir, "a.zip")
      {:ok, a} = ExZarr.create([path: "zip://" <> zip, mode: :write] ++ @array)
      :ok = ExZarr.close(a)
      assert {:ok, %ExZarr.Array{} = b} = ExZarr.open(storage: :zip, path: "file://" <> zip)
      :ok = ExZarr.close(b)
    end

    test "plain paths with a colon are still paths" do
      assert Storage.url_backend("data/a:b.zarr") == :not_url
      assert Storage.url_backend("c:/data") == :not_url
      assert Storage.url_scheme("file:/x") == nil
      assert Storage.url_backend(:s3) == :not_url
    end
  end
end
