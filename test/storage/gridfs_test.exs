defmodule ExZarr.Storage.GridFSTest do
  # One FerretDB for the module, a bucket per test.
  use ExUnit.Case, async: false

  alias ExZarr.Storage
  alias ExZarr.Storage.Mongo.{BSON, Connection}
  alias ExZarr.Test.FerretDB

  use FerretDB

  use ExZarr.StorageConformance,
    backend: :mongo_gridfs,
    opts: fn ctx -> FerretDB.store_opts(ctx.server, "t#{:erlang.phash2(ctx.test)}") end

  defp store(ctx, extra \\ []) do
    {:ok, store} =
      Storage.new(
        :mongo_gridfs,
        Keyword.merge(FerretDB.store_opts(ctx.server, bucket(ctx)), extra)
      )

    store
  end

  defp bucket(ctx), do: "b#{:erlang.phash2(ctx.test)}"

  # A raw command on the test server, to look at or tamper with what the store wrote.
  defp raw(ctx, command) do
    {:ok, conn} =
      Connection.open("127.0.0.1", ctx.server.port, connect_timeout: 5_000, timeout: 30_000)

    result = Connection.command(conn, "exzarr", command, 30_000)
    Connection.close(conn)
    result
  end

  defp find(ctx, collection, filter) do
    {:ok, %{"cursor" => %{"firstBatch" => docs}}} =
      raw(ctx, [{"find", collection}, {"filter", filter}, {"batchSize", 10_000}])

    docs
  end

  test "files are laid out as the drivers lay them out, in chunks of chunk_size", ctx do
    store = store(ctx, chunk_size: 1000, path: "root/a.zarr")
    value = :crypto.strong_rand_bytes(2500)
    :ok = Storage.put(store, "c/0/0", value)

    [file] = find(ctx, bucket(ctx) <> ".files", %{})

    assert %{
             "filename" => "root/a.zarr/c/0/0",
             "length" => 2500,
             "chunkSize" => 1000,
             "uploadDate" => {:datetime, _},
             "_id" => {:object_id, _} = id
           } = file

    chunks = find(ctx, bucket(ctx) <> ".chunks", %{"files_id" => id})
    assert chunks |> Enum.map(& &1["n"]) |> Enum.sort() == [0, 1, 2]

    assert chunks
           |> Enum.sort_by(& &1["n"])
           |> Enum.map(fn %{"data" => {:binary, 0, d}} -> d end)
           |> IO.iodata_to_binary() ==
             value

    assert Storage.list(store) == {:ok, ["c/0/0"]}
  end

  test "a ranged read fetches only the chunks covering the range", ctx do
    store = store(ctx, chunk_size: 100)
    value = :crypto.strong_rand_bytes(1000)
    :ok = Storage.put(store, "k", value)
    [%{"_id" => id}] = find(ctx, bucket(ctx) <> ".files", %{})

    # chunks 0 and 9 removed: reads that need them fail, the others cannot have read them
    {:ok, _} =
      raw(ctx, [
        {"delete", bucket(ctx) <> ".chunks"},
        {"deletes", [[{"q", [{"files_id", id}, {"n", [{"$in", [0, 9]}]}]}, {"limit", 0}]]}
      ])

    assert Storage.get(store, "k", {150, 600}) == {:ok, binary_part(value, 150, 600)}

    assert Storage.get_ranges(store, "k", [{100, 10}, {:suffix, 0}, {850, 50}]) ==
             {:ok, [binary_part(value, 100, 10), "", binary_part(value, 850, 50)]}

    assert Storage.get(store, "k") == {:error, {:corrupt_gridfs_file, "k"}}
    assert Storage.get(store, "k", {:suffix, 10}) == {:error, {:corrupt_gridfs_file, "k"}}
    assert Storage.get(store, "k", {0, 1}) == {:error, {:corrupt_gridfs_file, "k"}}
  end

  test "readers take the newest complete version; a put removes only older ones", ctx do
    store = store(ctx, chunk_size: 4)
    files = bucket(ctx) <> ".files"
    chunks = bucket(ctx) <> ".chunks"

    version = fn value, date ->
      id = BSON.object_id()

      docs = [
        [{"_id", BSON.object_id()}, {"files_id", id}, {"n", 0}, {"data", {:binary, 0, value}}]
      ]

      {:ok, _} = raw(ctx, [{"insert", chunks}, {"documents", docs}])

      file = [
        {"_id", id},
        {"length", byte_size(value)},
        {"chunkSize", 16},
        {"uploadDate", {:datetime, date}},
        {"filename", "k"}
      ]

      {:ok, _} = raw(ctx, [{"insert", files}, {"documents", [file]}])
      id
    end

    now = System.os_time(:millisecond)
    _old = version.("old", now - 60_000)
    newer = version.("new", now - 30_000)
    # chunks only: an unfinished upload is not a version
    {:ok, _} =
      raw(ctx, [
        {"insert", chunks},
        {"documents",
         [[{"files_id", BSON.object_id()}, {"n", 0}, {"data", {:binary, 0, "torn"}}]]}
      ])

    assert {:ok, ["new"], ^newer} = Storage.get_ranges_with_generation(store, "k", [nil])
    assert Storage.list(store) == {:ok, ["k"]}

    # a version from a writer whose clock runs ahead is read; a put after it is dated after
    # it, wins and removes it
    future = version.("future", now + 3_600_000)
    assert {:ok, ["future"], ^future} = Storage.get_ranges_with_generation(store, "k", [nil])
    :ok = Storage.put(store, "k", "mine")
    assert {:ok, ["mine"], mine} = Storage.get_ranges_with_generation(store, "k", [nil])
    assert [%{"_id" => ^mine}] = find(ctx, files, %{"filename" => "k"})
    ids = [future, mine]

    :ok = Storage.delete(store, "k")
    assert find(ctx, files, %{"filename" => "k"}) == []
    assert find(ctx, chunks, %{"files_id" => %{"$in" => ids}}) == []
    assert Storage.get(store, "k") == {:error, :not_found}
  end

  test "reads and listings longer than a cursor's first batch come whole", ctx do
    store = store(ctx, chunk_size: 1000)
    value = :crypto.strong_rand_bytes(300_500)
    :ok = Storage.put(store, "big", value)
    assert Storage.get(store, "big") == {:ok, value}
    assert Storage.get(store, "big", {999, 250_002}) == {:ok, binary_part(value, 999, 250_002)}

    keys = for i <- 1..150, do: "c/#{i}"
    Enum.each(keys, &(:ok = Storage.put(store, &1, "")))
    assert Storage.list(store, "c") == {:ok, Enum.sort(keys)}
  end

  test "the drivers' indexes are made by the first write, once per node and bucket", ctx do
    store = store(ctx)

    names = fn collection ->
      {:ok, %{"cursor" => %{"firstBatch" => indexes}}} = raw(ctx, [{"listIndexes", collection}])
      Map.new(indexes, &{&1["name"], &1})
    end

    :ok = Storage.put(store, "a", "1")
    assert %{"filename_1_uploadDate_1" => files} = names.(bucket(ctx) <> ".files")
    assert files["key"] == %{"filename" => 1, "uploadDate" => 1}
    assert %{"files_id_1_n_1" => %{"unique" => true}} = names.(bucket(ctx) <> ".chunks")
    assert %{"f_1_s_-1" => _} = names.(bucket(ctx) <> ".exzarr_commits")

    # dropped behind the store's back: not made again by this node
    {:ok, _} = raw(ctx, [{"dropIndexes", bucket(ctx) <> ".files"}, {"index", "*"}])
    :ok = Storage.put(store(ctx, path: "other"), "b", "2")
    refute Map.has_key?(names.(bucket(ctx) <> ".files"), "filename_1_uploadDate_1")
  end

  test "readers of many-chunk values never see a mix while writers replace them", ctx do
    store = store(ctx, chunk_size: 4096)
    values = for i <- 1..3, do: :binary.copy(<<i>>, 100_000)
    parts = Enum.map(values, &binary_part(&1, 50_000, 30_000))
    :ok = Storage.put(store, "k", hd(values))

    writers =
      for _ <- 1..2 do
        Task.async(fn -> for _ <- 1..15, do: Storage.put(store, "k", Enum.random(values)) end)
      end

    readers =
      for _ <- 1..3 do
        Task.async(fn ->
          for _ <- 1..30,
              do: {Storage.get(store, "k"), Storage.get(store, "k", {50_000, 30_000})}
        end)
      end

    assert writers |> Task.await_many(120_000) |> List.flatten() |> Enum.uniq() == [:ok]

    for {whole, part} <- readers |> Task.await_many(120_000) |> List.flatten() do
      assert {:ok, whole} = whole
      assert {:ok, part} = part
      assert whole in values and part in parts
    end
  end

  test "writes and deletes are numbered commits; a stale generation is refused", ctx do
    store = store(ctx)
    commits = bucket(ctx) <> ".exzarr_commits"
    {:ok, g1} = Storage.put_if(store, "k", "one", :absent)
    {:ok, g2} = Storage.put_if(store, "k", "two", g1)
    assert Storage.put_if(store, "k", "stale", g1) == {:error, :generation_mismatch}
    assert Storage.delete_if(store, "k", g1) == {:error, :generation_mismatch}
    :ok = Storage.delete(store, "k")
    assert Storage.get(store, "k") == {:error, :not_found}
    assert {:ok, g4} = Storage.put_if(store, "k", "again", :absent)

    assert [{1, ^g1}, {2, ^g2}, {3, nil}, {4, ^g4}] =
             find(ctx, commits, %{"f" => "k"})
             |> Enum.map(&{&1["s"], &1["v"]})
             |> Enum.sort()

    # the refused versions left nothing behind: one files document, no pending ones
    assert [%{"_id" => ^g4, "filename" => "k"}] = find(ctx, bucket(ctx) <> ".files", %{})
    assert length(find(ctx, bucket(ctx) <> ".chunks", %{})) == 1
  end

  test "a put leaves one version; its generation is the file's _id", ctx do
    store = store(ctx)

    for i <- 1..5, do: :ok = Storage.put(store, "k", "v#{i}")
    assert [%{"_id" => id}] = find(ctx, bucket(ctx) <> ".files", %{"filename" => "k"})
    assert {:ok, ["v5"], ^id} = Storage.get_ranges_with_generation(store, "k", [nil])
    assert length(find(ctx, bucket(ctx) <> ".chunks", %{})) == 1
  end

  test "options are checked; the password stays out of inspect", ctx do
    base = FerretDB.store_opts(ctx.server, "opts")

    for {option, value} <- [
          url: "http://x",
          url: "mongodb+srv://cluster.example/db",
          url: "mongodb://a:1,b:2/db",
          url: "mongodb://127.0.0.1/?tls=true",
          url: 5,
          database: "a.b",
          database: "",
          database: nil,
          collection: "sys$tem",
          collection: "",
          path: "../x",
          chunk_size: 0,
          chunk_size: 16 * 1024 * 1024,
          pool_size: 0,
          timeout: -1,
          max_retries: :many,
          username: 5
        ] do
      assert {:error, {:invalid_option, ^option, _}} =
               Storage.new(:mongo_gridfs, Keyword.put(base, option, value)),
             "#{option}: #{inspect(value)}"
    end

    assert {:error, {:invalid_option, :password, :not_a_utf8_string}} =
             Storage.new(:mongo_gridfs, base ++ [username: "u"])

    {:ok, store} = Storage.new(:mongo_gridfs, base ++ [username: "u", password: "s3cret!"])
    refute inspect(store) =~ "s3cret"

    {:ok, store} =
      Storage.new(:mongo_gridfs, Keyword.put(base, :url, "mongodb://u:s3cret%21@127.0.0.1:1/db"))

    refute inspect(store) =~ "s3cret"
    assert store.state.database == "exzarr"

    secret_option = "mongodb://127.0.0.1/?tlsCertificateKeyFilePassword=s3cret"
    assert {:error, reason} = Storage.new(:mongo_gridfs, Keyword.put(base, :url, secret_option))
    refute inspect(reason) =~ "s3cret"

    assert :url in ExZarr.Storage.GridFS.options() and
             :password in ExZarr.Storage.GridFS.options()
  end

  test "an unreachable server gives an error, not a crash", _ctx do
    [port] = ExZarr.Test.Server.free_ports(1)

    {:ok, store} =
      Storage.new(:mongo_gridfs,
        url: "mongodb://127.0.0.1:#{port}",
        database: "d",
        max_retries: 1,
        base_backoff: 1
      )

    assert {:error, {:mongo_connection, :econnrefused}} = Storage.get(store, "k")
    assert {:error, {:mongo_connection, :econnrefused}} = Storage.put(store, "k", "v")
  end

  test "a group with a sharded array, written through ExZarr, opens and reads back", ctx do
    opts =
      [storage: :mongo_gridfs, path: "tree.zarr"] ++ FerretDB.store_opts(ctx.server, bucket(ctx))

    {:ok, root} = ExZarr.create_group(opts ++ [attributes: %{"title" => "gridfs"}])

    {:ok, array} =
      ExZarr.Group.create_array(root, "s/a",
        shape: {40, 30},
        chunks: {5, 5},
        shards: {20, 15},
        dtype: :int32,
        compressor: %{id: "zstd", level: 1}
      )

    data = for i <- 0..1199, into: <<>>, do: <<i * 7::little-signed-32>>
    :ok = ExZarr.Array.set_slice(array, data, start: {0, 0}, stop: {40, 30})

    {:ok, group} = ExZarr.open_group(opts)
    assert group.metadata.attributes == %{"title" => "gridfs"}
    {:ok, reopened} = ExZarr.open(opts ++ [prefix: "s/a"])
    assert ExZarr.Array.get_slice(reopened, start: {0, 0}, stop: {40, 30}) == {:ok, data}

    cutout = for r <- 12..17, c <- 3..8, into: <<>>, do: <<(r * 30 + c) * 7::little-signed-32>>
    assert ExZarr.Array.get_slice(reopened, start: {12, 3}, stop: {18, 9}) == {:ok, cutout}
    assert {:ok, keys} = Storage.list(reopened.storage, "s/a/c")
    assert length(keys) == 4
  end
end
