defmodule ExZarr.Storage.Mongo.PoolTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.Mongo.{Connection, Pool}

  # Connections to a local listener that accepts and holds every socket; `opened` counts them.
  setup do
    {:ok, listener} = :gen_tcp.listen(0, [:binary, active: false, ip: {127, 0, 0, 1}])
    {:ok, port} = :inet.port(listener)
    acceptor = spawn_link(fn -> accept(listener, []) end)
    opened = :counters.new(1, [])

    open = fn ->
      :counters.add(opened, 1, 1)
      {:ok, socket} = :gen_tcp.connect({127, 0, 0, 1}, port, [:binary, active: false])
      {:ok, %Connection{socket: socket}}
    end

    :ok = Pool.start()
    on_exit(fn -> Process.exit(acceptor, :kill) end)
    %{open: open, opened: opened, key: make_ref()}
  end

  defp accept(listener, held) do
    {:ok, socket} = :gen_tcp.accept(listener)
    accept(listener, [socket | held])
  end

  defp opened(ctx), do: :counters.get(ctx.opened, 1)

  test "at most size connections are open; callers beyond wait and reuse them", ctx do
    results =
      1..20
      |> Task.async_stream(
        fn i ->
          Pool.run(ctx.key, 3, 5_000, ctx.open, fn conn ->
            Process.sleep(20) && {i, conn.socket}
          end)
        end,
        max_concurrency: 20
      )
      |> Enum.map(fn {:ok, result} -> result end)

    assert Enum.map(results, &elem(&1, 0)) == Enum.to_list(1..20)
    assert results |> Enum.map(&elem(&1, 1)) |> Enum.uniq() |> length() == 3
    assert opened(ctx) == 3
  end

  test "a caller that waits too long gets an error; the pool goes on", ctx do
    parent = self()

    holder =
      spawn(fn ->
        Pool.run(ctx.key, 1, 5_000, ctx.open, fn _ ->
          send(parent, :holding)
          receive do: (:release -> :ok)
        end)
      end)

    assert_receive :holding

    assert Pool.run(ctx.key, 1, 50, ctx.open, fn _ -> :ran end) ==
             {:error, {:mongo_connection, :pool_timeout}}

    send(holder, :release)
    assert Pool.run(ctx.key, 1, 5_000, ctx.open, fn _ -> :ran end) == :ran
    assert opened(ctx) == 1
  end

  test "a holder that dies gives its slot back; its connection is closed", ctx do
    parent = self()

    holder =
      spawn(fn ->
        Pool.run(ctx.key, 1, 5_000, ctx.open, fn conn ->
          send(parent, {:holding, conn})
          Process.sleep(:infinity)
        end)
      end)

    assert_receive {:holding, conn}
    Process.exit(holder, :kill)
    assert Pool.run(ctx.key, 1, 5_000, ctx.open, fn c -> c.socket != conn.socket end) == true
    assert {:error, _} = :inet.peername(conn.socket)
  end

  test "a connection error closes the connection and the idle ones; exceptions too", ctx do
    sockets =
      1..2
      |> Task.async_stream(fn _ ->
        Pool.run(ctx.key, 2, 5_000, ctx.open, fn conn -> Process.sleep(50) && conn.socket end)
      end)
      |> Enum.map(fn {:ok, socket} -> socket end)

    assert length(Enum.uniq(sockets)) == 2
    broken = {:error, {:mongo_connection, :closed}}
    assert Pool.run(ctx.key, 2, 5_000, ctx.open, fn _ -> broken end) == broken
    # the checkin is a message: wait until the pool has handled it
    _ = :sys.get_state(Pool)
    for socket <- sockets, do: assert({:error, _} = :inet.peername(socket))

    assert_raise RuntimeError, fn ->
      Pool.run(ctx.key, 2, 5_000, ctx.open, fn _ -> raise "boom" end)
    end

    # both slots are free again: two holders at once open two new connections
    1..2
    |> Task.async_stream(fn _ ->
      Pool.run(ctx.key, 2, 5_000, ctx.open, fn _ -> Process.sleep(50) end)
    end)
    |> Stream.run()

    assert opened(ctx) == 5
  end

  test "an open that fails frees its slot", ctx do
    failing = fn -> {:error, {:mongo_connection, :econnrefused}} end

    assert Pool.run(ctx.key, 1, 5_000, failing, fn _ -> :ran end) ==
             {:error, {:mongo_connection, :econnrefused}}

    assert Pool.run(ctx.key, 1, 5_000, ctx.open, fn _ -> :ran end) == :ran
  end
end
