defmodule ExZarr.Storage.Mongo.ConnectionTest do
  # A scripted server speaking just enough OP_MSG: what the connection (and, for cursors and
  # files documents, the GridFS store above it) does with replies no real server sends.
  use ExUnit.Case, async: true

  alias ExZarr.Storage
  alias ExZarr.Storage.Mongo.{BSON, Connection, Wire}

  # Starts a server answering each command with `answer.(command)`: a reply document, `{:raw,
  # fun}` sending `fun.(request_id)` as it is, or `:close`.
  defp serve(answer) do
    {:ok, listener} = :gen_tcp.listen(0, [:binary, active: false, ip: {127, 0, 0, 1}])
    {:ok, port} = :inet.port(listener)
    pid = spawn_link(fn -> accept(listener, answer) end)
    on_exit(fn -> Process.exit(pid, :kill) end)
    port
  end

  defp accept(listener, answer) do
    {:ok, socket} = :gen_tcp.accept(listener)
    spawn(fn -> session(socket, answer) end)
    accept(listener, answer)
  end

  defp session(socket, answer) do
    with {:ok, header} <- :gen_tcp.recv(socket, 16),
         {:ok, length, id, _, 2013} <- Wire.header(header),
         {:ok, body} <- :gen_tcp.recv(socket, length - 16),
         {:ok, command} <- Wire.decode_body(body) do
      case answer.(command) do
        :close ->
          :gen_tcp.close(socket)

        {:raw, bytes} ->
          :gen_tcp.send(socket, bytes.(id))
          session(socket, answer)

        reply ->
          message = IO.iodata_to_binary(Wire.encode(0, reply))
          <<size::little-32, _::32, _::32, rest::binary>> = message
          :gen_tcp.send(socket, <<size::little-32, 0::32, id::little-32, rest::binary>>)
          session(socket, answer)
      end
    end
  end

  # (no commits: the files collection is all there is)
  defp hello_then(fun) do
    fn
      %{"hello" => _} ->
        %{"ok" => 1.0, "maxBsonObjectSize" => 16_777_216}

      %{"find" => "fs.exzarr_commits"} ->
        %{"ok" => 1, "cursor" => %{"id" => 0, "firstBatch" => []}}

      command ->
        fun.(command)
    end
  end

  defp open(port), do: Connection.open("127.0.0.1", port, connect_timeout: 1_000, timeout: 1_000)

  defp store(port) do
    {:ok, store} =
      Storage.new(:mongo_gridfs,
        url: "mongodb://127.0.0.1:#{port}",
        database: "d",
        max_retries: 0,
        timeout: 1_000
      )

    store
  end

  test "a cursor that never ends is refused, not followed forever" do
    file = %{"_id" => BSON.object_id(), "length" => 10, "chunkSize" => 4}

    port =
      serve(
        hello_then(fn
          %{"find" => "fs.files"} ->
            %{"ok" => 1, "cursor" => %{"id" => 0, "firstBatch" => [file]}}

          %{"find" => "fs.chunks"} ->
            %{"ok" => 1, "cursor" => %{"id" => 7, "firstBatch" => []}}

          %{"getMore" => 7} ->
            %{"ok" => 1, "cursor" => %{"id" => 7, "nextBatch" => []}}
        end)
      )

    assert Storage.get(store(port), "k") ==
             {:error, {:mongo_connection, {:protocol, :empty_batch}}}
  end

  test "files documents and chunks that do not add up are errors" do
    id = BSON.object_id()

    files = fn doc ->
      fn
        %{"find" => "fs.files"} -> %{"ok" => 1, "cursor" => %{"id" => 0, "firstBatch" => [doc]}}
        %{"find" => "fs.chunks"} -> chunks([%{"n" => 0, "data" => {:binary, 0, "abc"}}])
      end
    end

    for doc <- [%{"_id" => id, "length" => -1}, %{"_id" => id}, %{"_id" => id, "length" => 5}] do
      port = serve(hello_then(files.(doc)))
      assert {:error, {:corrupt_gridfs_file, "k"}} = Storage.get(store(port), "k"), inspect(doc)
    end

    # a chunk longer than the file says
    port = serve(hello_then(files.(%{"_id" => id, "length" => 2, "chunkSize" => 4})))
    assert Storage.get(store(port), "k") == {:error, {:corrupt_gridfs_file, "k"}}
  end

  defp chunks(docs), do: %{"ok" => 1, "cursor" => %{"id" => 0, "firstBatch" => docs}}

  test "replies to another request, garbage, oversized lengths and closed sockets" do
    good = fn -> %{"ok" => 1} end

    cases = [
      # a reply whose responseTo names no request of ours
      {fn _ -> {:raw, fn _ -> IO.iodata_to_binary(Wire.encode(1, good.())) end} end,
       :unexpected_reply},
      # a reply shorter than its length says: the client waits until its timeout
      {fn _ -> {:raw, &<<100::little-32, 0::32, &1::little-32, 2013::little-32, 1, 2, 3>>} end,
       :timeout},
      {fn _ -> {:raw, &<<0x7FFFFFFF::little-32, 0::32, &1::little-32, 2013::little-32>>} end,
       :reply_too_large},
      {fn _ -> {:raw, &<<20::little-32, 0::32, &1::little-32, 2013::little-32, 0::32>>} end,
       {:protocol, :no_body}},
      {fn _ -> {:raw, fn _ -> <<5::little-32, 0::96>> end} end, {:protocol, :bad_header}},
      {fn _ -> :close end, :closed}
    ]

    for {answer, expected} <- cases do
      port = serve(hello_then(answer))
      {:ok, conn} = open(port)
      result = Connection.command(conn, "d", [{"ping", 1}], 500)
      Connection.close(conn)

      assert result == {:error, {:mongo_connection, expected}}
    end
  end

  test "server errors and write errors come back as they are" do
    port =
      serve(
        hello_then(fn
          %{"ping" => _} ->
            %{"ok" => 0.0, "code" => 13, "errmsg" => "unauthorized"}

          %{"insert" => _} ->
            %{"ok" => 1, "writeErrors" => [%{"code" => 11000, "errmsg" => "dup"}]}
        end)
      )

    {:ok, conn} = open(port)

    assert Connection.command(conn, "d", [{"ping", 1}], 500) ==
             {:error, {:mongo_error, 13, "unauthorized"}}

    assert Connection.command(conn, "d", [{"insert", "c"}, {"documents", [%{"a" => 1}]}], 500) ==
             {:error, {:mongo_error, 11000, "dup"}}
  end

  test "a login the server cannot prove is refused" do
    port =
      serve(
        hello_then(fn
          %{"saslStart" => _, "payload" => {:binary, 0, "n,,n=u,r=" <> nonce}} ->
            payload = "r=#{nonce}srv,s=#{Base.encode64("salt")},i=4096"

            %{
              "ok" => 1,
              "conversationId" => 1,
              "done" => false,
              "payload" => {:binary, 0, payload}
            }

          %{"saslContinue" => _} ->
            %{
              "ok" => 1,
              "conversationId" => 1,
              "done" => true,
              "payload" => {:binary, 0, "v=AAAA"}
            }
        end)
      )

    assert Connection.open("127.0.0.1", port,
             connect_timeout: 1_000,
             timeout: 1_000,
             credentials: {"u", fn -> "p" end, "admin"}
           ) == {:error, {:scram, :bad_server_signature}}
  end
end
