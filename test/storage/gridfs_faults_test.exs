defmodule ExZarr.Storage.GridFSFaultsTest do
  # Servers of their own (one with logins, one restarted, one behind toxiproxy).
  use ExUnit.Case, async: false
  @moduletag timeout: 300_000

  alias ExZarr.Storage
  alias ExZarr.Storage.Mongo.Connection
  alias ExZarr.Test.{FerretDB, Toxiproxy}

  use FerretDB, shared_server: false

  defp start_server(opts \\ []) do
    {:ok, bin} = @ferretdb
    server = FerretDB.start!(bin, opts)
    on_exit(fn -> FerretDB.stop(server) end)
    server
  end

  defp store(opts) do
    {:ok, store} = Storage.new(:mongo_gridfs, opts)
    store
  end

  describe "SCRAM-SHA-256 logins (FerretDB with --test-enable-new-auth)" do
    setup do
      %{server: start_server(auth: {"root", "r00t pass"})}
    end

    test "the right password opens the store; a wrong one or none is refused", ctx do
      base = Keyword.put(FerretDB.store_opts(ctx.server, "auth"), :max_retries, 0)
      good = store(base ++ [username: "root", password: "r00t pass"])
      assert :ok = Storage.put(good, "k", "v")
      assert Storage.get(good, "k") == {:ok, "v"}

      # the same login in the URL, percent-encoded
      url = "mongodb://root:r00t%20pass@127.0.0.1:#{ctx.server.port}/admin"
      assert Storage.get(store(Keyword.put(base, :url, url)), "k") == {:ok, "v"}

      wrong = store(base ++ [username: "root", password: "nope"])
      assert {:error, {:mongo_auth_failed, _code, _message} = reason} = Storage.get(wrong, "k")
      refute inspect(reason) =~ "nope"

      assert {:error, {:mongo_auth_failed, _, _}} =
               Storage.get(store(base ++ [username: "ghost", password: "x"]), "k")

      # no login: the server refuses the commands
      assert {:error, {:mongo_error, _, _}} = Storage.get(store(base), "k")
    end

    test "a user of another database logs in there (auth_source)", ctx do
      admin = [username: "root", password: "r00t pass"]
      root = store(FerretDB.store_opts(ctx.server, "setup") ++ admin)
      :ok = Storage.put(root, "x", "y")

      {:ok, conn} =
        Connection.open("127.0.0.1", ctx.server.port,
          connect_timeout: 5_000,
          timeout: 30_000,
          credentials: {"root", fn -> "r00t pass" end, "admin"}
        )

      user = [{"createUser", "zarr"}, {"pwd", "zarr-pw,=é"}, {"roles", []}]
      assert {:ok, _} = Connection.command(conn, "exzarr", user, 30_000)
      Connection.close(conn)

      opts = FerretDB.store_opts(ctx.server, "own") ++ [username: "zarr", password: "zarr-pw,=é"]
      assert :ok = Storage.put(store(opts ++ [auth_source: "exzarr"]), "k", "mine")

      assert {:error, {:mongo_auth_failed, _, _}} =
               Storage.get(store(Keyword.merge(opts, auth_source: "admin", max_retries: 0)), "k")
    end
  end

  # Runs `writer` and `reader` loops while `fault` runs, then returns their results.
  defp under_fault(store, values, fault) do
    stop = :atomics.new(1, [])

    loop = fn step ->
      Task.async(fn ->
        Stream.repeatedly(step)
        |> Enum.take_while(fn _ -> :atomics.get(stop, 1) == 0 end)
      end)
    end

    writer = loop.(fn -> Storage.put(store, "k", Enum.random(values)) end)
    reader = loop.(fn -> Storage.get(store, "k") end)
    ranges = loop.(fn -> Storage.get(store, "k", {5_000, 20_000}) end)
    fault.()
    :atomics.put(stop, 1, 1)
    Enum.map([writer, reader, ranges], &Task.await(&1, 120_000))
  end

  defp values,
    do: for(i <- 1..4, do: :binary.copy(<<i>>, 60_000) <> :crypto.strong_rand_bytes(40))

  defp assert_whole({writes, reads, ranges}, values) do
    assert Enum.all?(writes, &(match?(:ok, &1) or match?({:error, _}, &1)))
    parts = Enum.map(values, &binary_part(&1, 5_000, 20_000))

    for read <- reads do
      assert match?({:error, _}, read) or (match?({:ok, _}, read) and elem(read, 1) in values),
             "a torn or unknown value: #{inspect(read, limit: 5)}"
    end

    for read <- ranges do
      assert match?({:error, _}, read) or (match?({:ok, _}, read) and elem(read, 1) in parts)
    end
  end

  test "the server restarts mid-run: every call succeeds or errs, no value is torn" do
    server = start_server()
    values = values()

    store =
      store(
        Keyword.merge(FerretDB.store_opts(server, "restart"),
          chunk_size: 4096,
          timeout: 5_000,
          max_retries: 2
        )
      )

    :ok = Storage.put(store, "k", hd(values))

    [writes, reads, ranges] =
      under_fault(store, values, fn ->
        Process.sleep(300)
        FerretDB.restart(server)
        Process.sleep(300)
      end)

    assert_whole({writes, reads, ranges}, values)
    assert length(reads) > 5

    # afterwards the store works again on fresh connections
    :ok = Storage.put(store, "k", List.last(values))
    assert Storage.get(store, "k") == {:ok, List.last(values)}
  end

  describe "connections cut by toxiproxy" do
    setup do
      server = start_server()

      {:ok, toxiproxy} = Toxiproxy.start(server.port)
      on_exit(fn -> Toxiproxy.stop(toxiproxy) end)
      port = toxiproxy.endpoint |> URI.parse() |> Map.fetch!(:port)
      direct = FerretDB.store_opts(server, "cut") ++ [chunk_size: 4096]
      faulty = Keyword.merge(direct, url: "mongodb://127.0.0.1:#{port}", timeout: 1_000)
      %{toxiproxy: toxiproxy, direct: store(direct), faulty: faulty}
    end

    test "replies cut mid-way give errors, never part of a value", ctx do
      value = :crypto.strong_rand_bytes(100_000)
      :ok = Storage.put(ctx.direct, "k", value)
      fragile = store(Keyword.put(ctx.faulty, :max_retries, 0))

      # a connection closed after 20 kB of replies: small commands pass, the value does not
      :ok = Toxiproxy.add(ctx.toxiproxy, :limit_data, bytes: 20_000)
      assert {:error, {:mongo_connection, :closed}} = Storage.get(fragile, "k")
      assert Storage.get(fragile, "k", {0, 4}) == {:ok, binary_part(value, 0, 4)}
      :ok = Toxiproxy.remove(ctx.toxiproxy, :limit_data)

      for {type, attributes} <- [reset_peer: [ms: 0], timeout: [ms: 0]] do
        :ok = Toxiproxy.add(ctx.toxiproxy, type, attributes)
        assert {:error, {:mongo_connection, _}} = Storage.get(fragile, "k"), "#{type}"
        assert {:error, {:mongo_connection, _}} = Storage.put(fragile, "k", "new"), "#{type}"
        :ok = Toxiproxy.remove(ctx.toxiproxy, type)
      end

      # every put above may or may not have landed, whole
      assert {:ok, stored} = Storage.get(store(ctx.faulty), "k")
      assert stored in [value, "new"]

      # retries outlive a short fault
      resilient =
        store(Keyword.merge(ctx.faulty, max_retries: 8, base_backoff: 100, max_backoff: 400))

      :ok = Storage.put(ctx.direct, "k", value)

      assert Toxiproxy.outlasting(ctx.toxiproxy, :limit_data, [bytes: 20_000], fn ->
               Storage.get(resilient, "k")
             end) == {:ok, value}
    end

    test "slow readers whose version is replaced and removed mid-read start again on the newest",
         ctx do
      values = values()
      :ok = Storage.put(ctx.direct, "k", hd(values))
      # every reply to the readers comes 40 ms late: the writer removes versions under them
      :ok = Toxiproxy.add(ctx.toxiproxy, :latency, ms: 40)
      slow = store(Keyword.put(ctx.faulty, :timeout, 10_000))

      writer =
        Task.async(fn -> for _ <- 1..40, do: Storage.put(ctx.direct, "k", Enum.random(values)) end)

      readers =
        for _ <- 1..3, do: Task.async(fn -> for _ <- 1..10, do: Storage.get(slow, "k") end)

      assert writer |> Task.await(120_000) |> Enum.uniq() == [:ok]
      reads = readers |> Task.await_many(120_000) |> List.flatten()

      for read <- reads do
        case read do
          {:ok, value} -> assert value in values
          other -> assert other == {:error, {:replaced_while_read, "k"}}
        end
      end

      assert Enum.any?(reads, &match?({:ok, _}, &1))
    end

    test "the proxy goes down and up under readers and writers: no torn value", ctx do
      values = values()
      :ok = Storage.put(ctx.direct, "k", hd(values))
      store = store(Keyword.merge(ctx.faulty, max_retries: 1, base_backoff: 10))

      [writes, reads, ranges] =
        under_fault(store, values, fn ->
          for _ <- 1..4 do
            Process.sleep(150)
            Toxiproxy.down(ctx.toxiproxy)
            Process.sleep(100)
            Toxiproxy.up(ctx.toxiproxy)
          end
        end)

      assert_whole({writes, reads, ranges}, values)
      assert {:ok, stored} = Storage.get(ctx.direct, "k")
      assert stored in values
    end
  end
end
