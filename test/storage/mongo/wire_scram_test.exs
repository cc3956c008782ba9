defmodule ExZarr.Storage.Mongo.WireSCRAMTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.Mongo.{BSON, SCRAM, Wire}

  doctest Wire
  doctest SCRAM

  describe "OP_MSG replies" do
    defp body(doc), do: IO.iodata_to_binary(BSON.encode(doc))

    test "document sequences are skipped, a checksum is ignored" do
      sequence =
        <<1, 4 + 5 + byte_size(body(%{"x" => 1}))::little-32, "docs", 0>> <> body(%{"x" => 1})

      assert Wire.decode_body(<<0::32>> <> sequence <> <<0>> <> body(%{"ok" => 1})) ==
               {:ok, %{"ok" => 1}}

      assert Wire.decode_body(<<1::little-32, 0>> <> body(%{"ok" => 1}) <> <<1, 2, 3, 4>>) ==
               {:ok, %{"ok" => 1}}
    end

    test "malformed replies are protocol errors" do
      ok = body(%{"ok" => 1})

      for {bytes, what} <- [
            {<<0::32>>, :no_body},
            {<<0, 0>>, :truncated},
            {<<2::little-32, 0>> <> ok, :more_to_come},
            {<<0::32, 0>> <> ok <> <<0>> <> ok, :bad_section},
            {<<0::32, 7>> <> ok, :bad_section},
            {<<0::32, 1, 200::little-32, "x">>, :bad_section}
          ] do
        assert Wire.decode_body(bytes) == {:error, {:protocol, what}}, inspect(bytes)
      end

      assert {:error, {:protocol, {:invalid_bson, _}}} = Wire.decode_body(<<0::32, 0, 1, 2, 3>>)
      assert Wire.header(<<3::little-32, 0::96>>) == {:error, {:protocol, :bad_header}}
    end
  end

  describe "SCRAM-SHA-256" do
    @server_first "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"

    defp state, do: elem(SCRAM.client_first("user", "rOprNGfwEbeRWgbNEkqO"), 1)

    test "user names escape = and ," do
      assert {"n,,n=a=2Cb=3Dc,r=N", _} = SCRAM.client_first("a,b=c", "N")
    end

    test "a server that does not extend our nonce, or sends nonsense, is refused" do
      assert SCRAM.client_final(state(), "r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "pencil") ==
               {:error, {:scram, :nonce_mismatch}}

      for bad <- ["", "r=rOprNGfwEbeRWgbNEkqO", "garbage", "r=rOprNGfwEbeRWgbNEkqOx,s=!!,i=4096"] do
        assert {:error, {:scram, _}} = SCRAM.client_final(state(), bad, "pencil")
      end

      for i <- ["0", "-1", "x", "100000000"] do
        first = "r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=" <> i

        assert {:error, {:scram, {:bad_iteration_count, ^i}}} =
                 SCRAM.client_final(state(), first, "p")
      end
    end

    test "the server must prove it knows the password" do
      {:ok, _final, state} = SCRAM.client_final(state(), @server_first, "pencil")

      assert SCRAM.verify_server_final(state, "v=AAAA") ==
               {:error, {:scram, :bad_server_signature}}

      assert SCRAM.verify_server_final(state, "e=invalid-proof") ==
               {:error, {:scram, {:server_error, "invalid-proof"}}}

      assert {:error, {:scram, _}} = SCRAM.verify_server_final(state, "x")

      # the right signature for a different password is wrong for this one
      {:ok, _final, other} = SCRAM.client_final(state(), @server_first, "pencil2")

      assert SCRAM.verify_server_final(other, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") ==
               {:error, {:scram, :bad_server_signature}}
    end

    test "passwords are prepared: non-ASCII spaces, invalid UTF-8" do
      assert SCRAM.saslprep("a\u00A0b") == {:ok, "a b"}
      assert SCRAM.saslprep("plain ASCII ~!") == {:ok, "plain ASCII ~!"}
      assert SCRAM.saslprep(<<0xFF>>) == {:error, {:scram, :invalid_utf8}}
    end
  end
end
